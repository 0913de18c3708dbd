"""`flopkb claims` (under construction by its owner this session)."""

from __future__ import annotations

import typer


def claims(ctx: typer.Context) -> None:
    """Not built yet."""
    raise NotImplementedError("flopkb claims is not built yet")
