"""Model and operator classes and their claims (`flop.hardware_parameters` rows)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from flopkb.model.base import Kind, NonEmpty, RecordBase, RecordId, SourceRef, Strict

Scalar = str | int | float | bool
RowId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
SideName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80)]


class Basis(str, Enum):
    """How firmly a claim stands: rule 3 of DESIGN checks that the basis is earned."""

    unverified = "unverified"
    cited = "cited"
    derived = "derived"
    measured = "measured"


class VerifyLink(Strict):
    """Links a claim to an experiment of `flopkb verify` (bundled, or the KB's `experiments/`)."""

    experiment: RecordId
    subject: SideName | None = Field(
        default=None,
        description="the experiment's side that stands for this claim's class, where the class "
        "is none of the classes its sides declare",
    )


class HardwareParameter(Strict):
    """One claim: a hardware quantity that moves the class's cost, quoted from the prose."""

    id: RowId
    quantity: RecordId = Field(description="a quantity record id")
    effect: NonEmpty = Field(description="verbatim span of the record's prose")
    magnitude: NonEmpty = Field(
        description="figures the prose already quotes, in the magnitude grammar"
    )
    basis: Basis
    source: SourceRef | None = None
    formula: str | None = Field(
        default=None, description="basis derived: an expression over quantity ids (and numbers)"
    )
    conditions: dict[str, Scalar] = Field(default_factory=dict)
    verify: VerifyLink | None = None
    note: str | None = None


class Flop(Strict):
    complexity: dict[str, NonEmpty] = Field(default_factory=dict)
    hardware_parameters: list[HardwareParameter] = Field(default_factory=list)


class ClassRecord(RecordBase):
    kind: Literal[Kind.operator, Kind.model]
    prose: NonEmpty
    key_points: list[NonEmpty] = Field(default_factory=list)
    sources: list[SourceRef] = Field(default_factory=list)
    affected_by_hardware: list[RecordId] = Field(default_factory=list)
    related: list[RecordId] = Field(default_factory=list, description="other class records")
    flop: Flop = Field(default_factory=Flop)
