"""Hardware QUANTITIES: a datasheet one has a unit and a meaning; a computed one a formula."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flopkb.model.base import Kind, NonEmpty, RecordBase


class QuantityRecord(RecordBase):
    kind: Literal[Kind.quantity]
    unit: NonEmpty
    meaning: NonEmpty
    formula: str | None = Field(
        default=None,
        description="computed quantities only: + - * / ** and parentheses over numbers and "
        "quantity ids",
    )
