"""The `flopkb` command line: one Typer app, one module per command group, no logic here.

Errors never show click's or rich's boxes: `FlopkbGroup.main` runs click without standalone mode
and turns every usage error into one line (or one JSON document under `--format json`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from flopkb import __version__
from flopkb.cli import (
    add,
    claims,
    evidence,
    extract,
    graph,
    hw,
    init,
    interrupts,
    model,
    schema,
    validate,
    verify,
)
from flopkb.cli.argv import hoist_global_options
from flopkb.cli.common import (
    CliState,
    ColorMode,
    configure_color,
    err_console,
    plain,
    report_error,
    set_json_errors,
    wants_json,
)
from flopkb.cli.help import EPILOG, example

FORMAT_HELP = (
    "-f, --format <text|json>",
    "the command's output: text for people, json for scripts (stable; validate also github, "
    "sarif); before or after the command (for `graph export`: the file format)",
)


class FlopkbGroup(TyperGroup):
    """The root command: one-line (or JSON) usage errors, never a traceback unless --debug."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The root's options, and `--format`: each command owns it (`flopkb.cli.argv` moves it
        after the command), so click would not list it here, though it is accepted here."""
        records = [r for p in self.get_params(ctx) if (r := p.get_help_record(ctx)) is not None]
        at = next((i for i, r in enumerate(records) if r[0].startswith("--version")), -1) + 1
        records.insert(at, FORMAT_HELP)
        with formatter.section("Options"):
            formatter.write_dl(records)
        self.format_commands(ctx, formatter)

    def main(  # type: ignore[override]
        self,
        args: list[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        # `--kb`, `--color`, `--debug`, `--version` also after the command (flopkb.cli.argv)
        argv = hoist_global_options(list(sys.argv[1:] if args is None else args))
        set_json_errors(wants_json(argv))
        try:
            code = super().main(
                args=argv, prog_name=prog_name or "flopkb", complete_var=complete_var,
                standalone_mode=False, **extra,
            )  # fmt: skip
        except typer.TyperException as exc:
            # typer vendors click: its UsageError (with .ctx) and ClickException derive from this
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError":
                typer.echo(exc.format_message())
                code = 0
            else:
                where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                message = " ".join(exc.format_message().split())
                report_error(f"{message}{where}", 2, "usage")
                code = 2
        except typer.Abort:
            report_error("aborted", 1, "aborted")
            code = 1
        except Exception as exc:  # the last line of defence: never a traceback by default
            if "--debug" in argv:
                raise
            report_error(f"{type(exc).__name__}: {exc}", 2, "internal")
            code = 2
        finally:
            set_json_errors(False)
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(
    name="flopkb",
    cls=FlopkbGroup,
    help="How model and operator classes turn FLOPs into time on accelerators: a checked KB.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=True,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"flopkb {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    kb: Annotated[
        str | None,
        typer.Option(
            "--kb",
            metavar="DIR|bundled",
            help="KB root (the folder holding records/), or 'bundled' for the KB inside flopkb; "
            "default: found from the current folder (or the given path) upward",
        ),
    ] = None,
    color: Annotated[
        ColorMode, typer.Option("--color", help="colour: auto (honours NO_COLOR), always, never")
    ] = ColorMode.auto,
    debug: Annotated[
        bool, typer.Option("--debug", help="show tracebacks of unexpected errors")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    configure_color(color)
    ctx.obj = CliState(kb=Path(kb) if kb not in (None, "bundled") else kb, debug=debug)


app.command("validate", epilog=example("flopkb validate --strict --format sarif > kb.sarif"))(
    validate.validate
)
app.command("claims", epilog=example("flopkb claims --record mamba2-ssd --format json"))(
    claims.claims
)
app.command("extract", epilog=example("flopkb extract selective-ssm-scan"))(extract.extract)
app.command("verify", epilog=example("flopkb verify --record mamba2-ssd"))(verify.verify)
app.command("init", epilog=example("flopkb init my-kb && cd my-kb && flopkb validate"))(init.init)
app.command("add", epilog=example("flopkb add h200-sxm && flopkb validate"))(add.add)
app.add_typer(schema.app, name="schema", epilog=example("flopkb schema export --check"))
app.add_typer(evidence.app, name="evidence",
              epilog=example("flopkb evidence sign ev-mamba2-ssd--... --key ~/.ssh/id_ed25519"))
app.add_typer(hw.app, name="hw", epilog=example("flopkb hw show h200-sxm"))
app.add_typer(
    model.app, name="model", epilog=example("flopkb model show nemotron-h-8b --context 65536")
)
app.add_typer(
    graph.app, name="graph", epilog=example("flopkb graph affects hbm_bandwidth --format json")
)


def main() -> None:
    """Console entry point: an unexpected error is one line (exit 2); `--debug` shows it all.

    SIGINT and SIGTERM end a command cleanly (temp files removed, child processes ended) with
    one line and exit 130 / 143, also when they arrive after the command's output is complete.
    """
    interrupts.install()
    code: int | str | None = 0
    try:
        try:
            app(standalone_mode=True)
        finally:
            interrupts.finish()
    except SystemExit as exc:
        code = exc.code
    except (KeyboardInterrupt, interrupts.Terminated):
        code = 1  # replaced below by 128 + the signal's number
    except Exception as exc:  # the last line of defence: never a traceback by default
        if "--debug" in sys.argv:
            raise
        err_console.print(plain(f"flopkb: error: {type(exc).__name__}: {exc}"), highlight=False)
        code = 2
    signum = interrupts.finish()
    if signum is not None:
        err_console.print(interrupts.message(signum), markup=False, highlight=False)
        code = 128 + signum
    sys.exit(code)
