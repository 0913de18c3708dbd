"""`flopkb extract` (under construction by its owner this session)."""

from __future__ import annotations

import typer


def extract(ctx: typer.Context) -> None:
    """Not built yet."""
    raise NotImplementedError("flopkb extract is not built yet")
