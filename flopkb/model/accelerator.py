"""Accelerator PRODUCTS with datasheet specs, each with value, unit and source."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flopkb.model.base import Kind, NonEmpty, Number, RecordBase, RecordId, SourceRef, Strict


class Spec(Strict):
    """A datasheet figure. `value: null` means the part lacks the feature; `note` says why."""

    value: Number | None
    unit: NonEmpty
    source: SourceRef | None = None
    note: str | None = None


class AcceleratorRecord(RecordBase):
    kind: Literal[Kind.accelerator]
    vendor: NonEmpty
    architecture: NonEmpty
    form_factor: str | None = None
    match: list[NonEmpty] = Field(
        default_factory=list,
        description="case-insensitive regular expressions matched against the GPU name a "
        "running machine reports (torch.cuda.get_device_name), used by verify",
    )
    specs: dict[RecordId, Spec]
    sources: list[SourceRef] = Field(default_factory=list)
