"""`flopkb verify` (under construction by its owner this session)."""

from __future__ import annotations

import typer


def verify(ctx: typer.Context) -> None:
    """Not built yet."""
    raise NotImplementedError("flopkb verify is not built yet")
