"""`flopkb validate` (under construction by its owner this session)."""

from __future__ import annotations

import typer


def validate(ctx: typer.Context) -> None:
    """Not built yet."""
    raise NotImplementedError("flopkb validate is not built yet")
