"""`flopkb schema` (under construction by its owner this session)."""

from __future__ import annotations

import typer

app = typer.Typer(help="schema commands", no_args_is_help=True)
