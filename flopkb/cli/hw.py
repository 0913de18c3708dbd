"""`flopkb hw` (under construction by its owner this session)."""

from __future__ import annotations

import typer

app = typer.Typer(help="hw commands", no_args_is_help=True)
