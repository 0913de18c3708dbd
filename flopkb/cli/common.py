"""Options and helpers shared by every command: declared once, used everywhere."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from flopkb.atomic import UnsafeTarget, WritePolicy, writing
from flopkb.paths import resolve_kb_root
from flopkb.walk import records_dir


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


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

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


@dataclass
class CliState:
    kb: Path | None = None
    debug: bool = False


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    return root.obj if isinstance(root.obj, CliState) else CliState()


def kb_root(ctx: typer.Context) -> Path:
    """The KB root this invocation works on (`--kb`, ./records, or the bundled KB)."""
    return resolve_kb_root(state(ctx).kb)


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


def emit_json(payload: Any) -> None:
    """Print `payload` as JSON exactly as the library returned it (plain stdout, no rich markup)."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")


def fail(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr and exit `code` (2: usage or I/O error)."""
    err_console.print(f"flopkb: error: {message}", markup=False, highlight=False)
    raise typer.Exit(code)
