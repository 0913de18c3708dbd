"""Options and helpers shared by every command: declared once, used everywhere."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console

from flopkb.paths import resolve_kb_root


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="text for people, json for scripts (stable)")
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


def emit_json(payload: Any) -> None:
    """Print `payload` as JSON exactly as the library returned it (plain stdout, no rich markup)."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")


def fail(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr and exit `code` (2: usage or I/O error)."""
    err_console.print(f"flopkb: error: {message}", markup=False, highlight=False)
    raise typer.Exit(code)
