"""The `flopkb` command line: one Typer app, one module per command group, no logic here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli import claims, extract, graph, hw, interrupts, schema, validate, verify
from flopkb.cli.common import CliState, err_console

app = typer.Typer(
    name="flopkb",
    help="How model and operator classes turn FLOPs into time on accelerators: a checked KB.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    kb: Annotated[
        Path | None,
        typer.Option("--kb", help="KB root (holds records/); default ./records, else bundled"),
    ] = None,
    debug: Annotated[
        bool, typer.Option("--debug", help="show tracebacks of unexpected errors")
    ] = False,
) -> None:
    ctx.obj = CliState(kb=kb, debug=debug)


app.command("validate")(validate.validate)
app.command("claims")(claims.claims)
app.command("extract")(extract.extract)
app.command("verify")(verify.verify)
app.add_typer(schema.app, name="schema")
app.add_typer(hw.app, name="hw")
app.add_typer(graph.app, name="graph")


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
        message = f"flopkb: error: {type(exc).__name__}: {exc}"
        err_console.print(message, markup=False, highlight=False)
        code = 2
    signum = interrupts.finish()
    if signum is not None:
        err_console.print(interrupts.message(signum), markup=False, highlight=False)
        code = 128 + signum
    sys.exit(code)
