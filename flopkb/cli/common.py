"""Options and helpers shared by every command: declared once, used everywhere.

Errors: `fail()` prints one line on stderr, or, when the command line asked for `--format json`,
one JSON document on stdout (`{"ok": false, "error": {...}}`), and exits 2 (usage, I/O, no KB).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from flopkb.atomic import UnsafeTarget, WritePolicy, writing
from flopkb.config import ConfigError
from flopkb.escape import GuardedStream, guard_json, visible
from flopkb.findings import Severity
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.load.walk import records_dir
from flopkb.paths import KbLocation, KbNotFound, find_kb


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class ColorMode(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="text for people, json for scripts (stable)")
]

ForceOption = Annotated[
    bool, typer.Option("--force", help="replace an existing output file (else: refused)")
]
FollowSymlinksOption = Annotated[
    bool,
    typer.Option(
        "--follow-symlinks", help="write through a symlink at the output path (else: refused)"
    ),
]

# Both consoles write through `GuardedStream`: no line they print can be a CI workflow command,
# however a table cut or wrapped what a record holds. Record text itself reaches them as `Text`
# built by `plain` (escaped, never parsed as markup).
console = Console(soft_wrap=True, file=GuardedStream())
err_console = Console(stderr=True, soft_wrap=True, file=GuardedStream(stderr=True))

# Set from the raw command line before parsing (see flopkb.cli.app_group), so that even a usage
# error click raises before any command runs can answer in the format that was asked for.
_JSON_ERRORS = {"on": False}


def wants_json(args: list[str]) -> bool:
    """Did the command line ask for `--format json` (any spelling click accepts)?"""
    for i, arg in enumerate(args):
        if arg in ("--format", "-f") and i + 1 < len(args) and args[i + 1] == "json":
            return True
        if arg in ("--format=json", "-fjson"):
            return True
    return False


def set_json_errors(on: bool) -> None:
    _JSON_ERRORS["on"] = on


def configure_color(mode: ColorMode) -> None:
    """`--color never|always|auto`; NO_COLOR (any non-empty value) means never unless `always`.

    The two consoles are re-initialised in place: every command module imported them by name.
    """
    no_color = mode is ColorMode.never or (
        mode is ColorMode.auto and bool(os.environ.get("NO_COLOR"))
    )
    force = True if mode is ColorMode.always else None
    for target, stderr in ((console, False), (err_console, True)):
        target.__init__(  # type: ignore[misc]
            soft_wrap=True,
            stderr=stderr,
            file=GuardedStream(stderr=stderr),
            no_color=no_color,
            force_terminal=force,
            color_system=None if no_color else "auto",
            highlight=not no_color,
        )


def plain(*parts: object | tuple[object, str]) -> Text:
    """Text for a console: each part escaped (`flopkb.escape.visible`) and never read as rich
    markup, so `[link=...]` or `[/x]` in a record prints as written; `(part, style)` styles one.
    """
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(visible(part[0]), style=part[1])
        else:
            out.append(visible(part))
    return out


@dataclass
class CliState:
    kb: Path | str | None = None
    debug: bool = False
    located: dict[str, KbLocation] = field(default_factory=dict)


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    return root.obj if isinstance(root.obj, CliState) else CliState()


def kb_location(
    ctx: typer.Context, start: Path | None = None, isolated: bool = False
) -> KbLocation:
    """The KB this invocation works on (`--kb`, found from `start` or the current folder upward,
    or the bundled KB); a missing or empty `--kb`, or an unreadable config, exits 2.
    `isolated`: read no config file (see `flopkb.paths.find_kb`)."""
    cli = state(ctx)
    key = f"{start}\0{isolated}"
    if key not in cli.located:
        try:
            cli.located[key] = find_kb(cli.kb, start, isolated)
        except (KbNotFound, ConfigError) as exc:
            fail(str(exc))
    return cli.located[key]


def kb_location_of_files(
    ctx: typer.Context, start: Path, isolated: bool = False
) -> KbLocation | None:
    """Like `kb_location` for given files, which may lie outside any KB (checked on their own):
    None then, unless `--kb` was given (which must exist)."""
    cli = state(ctx)
    try:
        found = find_kb(cli.kb, start, isolated)
    except KbNotFound as exc:
        if cli.kb is not None:
            fail(str(exc))
        return None
    except ConfigError as exc:
        fail(str(exc))
    # files with no KB around them are checked on their own, not against the bundled KB
    return None if found.bundled and cli.kb is None else found


def kb_root(ctx: typer.Context) -> Path:
    return kb_location(ctx).root


def loaded_kb(ctx: typer.Context, kept: str) -> KnowledgeBase:
    """The KB, loaded for a command that only reads it: loading errors do not stop it, one
    warning line on stderr counts them and says what the answer holds (`kept`) instead."""
    kb, findings = load_kb(kb_root(ctx))
    errors = sum(1 for f in findings if f.severity is Severity.error)
    if errors:
        err_console.print(
            f"flopkb: warning: {errors} loading error(s); {kept} (run `flopkb validate`)",
            markup=False, highlight=False,
        )  # fmt: skip
    return kb


def print_kb(ctx: typer.Context) -> None:
    """The closing line of a text summary: which KB it read, and how that KB was found."""
    console.print(plain((kb_location(ctx).describe(), "dim")), highlight=False)


def write_policy(
    ctx: typer.Context, force: bool = False, follow_symlinks: bool = False, records: bool = False
) -> WritePolicy:
    """The one write rule (`flopkb.atomic`) for this command: `--force`, `--follow-symlinks`,
    and the KB's records/ off limits unless the command writes records (`records=True`)."""
    protected = () if records else (records_dir(kb_root(ctx)),)
    return WritePolicy(force=force, follow_symlinks=follow_symlinks, protected=protected)


@contextlib.contextmanager
def safe_writes(policy: WritePolicy) -> Iterator[None]:
    """Writes in the block follow `policy`; a refused or failed write is one line and exit 2."""
    with writing(policy):
        try:
            yield
        except UnsafeTarget as exc:
            fail(f"refused: {exc}")
        except OSError as exc:
            name = f" {exc.filename}" if exc.filename else ""
            fail(f"cannot write{name}: {exc.strerror or exc}")


@contextlib.contextmanager
def failing_on(*errors: type[Exception]) -> Iterator[None]:
    """An error of these types raised in the block is the user's input at fault (an unknown id,
    a key that cannot sign): its message as one line (see `fail`), exit 2."""
    try:
        yield
    except errors as exc:
        fail(str(exc))


def emit_json(payload: Any) -> None:
    """Print `payload` as JSON exactly as the library returned it (plain stdout, no rich markup)."""
    sys.stdout.write(guard_json(json.dumps(payload, indent=2, sort_keys=False, default=str)) + "\n")


def error_document(message: str, code: int, kind: str) -> dict[str, Any]:
    """What `--format json` prints for an error: one document, never empty stdout."""
    return {"ok": False, "error": {"kind": kind, "message": message, "exit_code": code}}


def report_error(message: str, code: int = 2, kind: str = "usage") -> None:
    """One line on stderr, or the JSON error document on stdout under `--format json`."""
    if _JSON_ERRORS["on"]:
        emit_json(error_document(message, code, kind))
    else:
        err_console.print(plain("flopkb: error: ", message), highlight=False)


def fail(message: str, code: int = 2, kind: str = "usage") -> NoReturn:
    """Report one error (see `report_error`) and exit `code` (2: usage or I/O error)."""
    report_error(message, code, kind)
    raise typer.Exit(code)
