"""Model and operator classes and their claims (`flop.hardware_parameters` rows)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from flopkb.model.base import Kind, NonEmpty, RecordBase, RecordId, SourceRef, Strict

Scalar = str | int | float | bool
RowId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=80)]
SideName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80)]


class Basis(str, Enum):
    """How firmly a claim stands: the provenance rules check that the basis is earned."""

    unverified = "unverified"
    cited = "cited"
    derived = "derived"
    measured = "measured"


class VerifyLink(Strict):
    """Links a claim to an experiment of `flopkb verify` (bundled, or the KB's `experiments/`),
    or says why no run of `flopkb verify` can judge it (`not_applicable`: e.g. it compares two
    GPU models, or needs several nodes): exactly one of the two."""

    # the schema says "exactly one of" as the validator below does: one of the two is text,
    # and not both are (a null is "not given")
    model_config = ConfigDict(**Strict.model_config, json_schema_extra={
        "anyOf": [{"required": [name], "properties": {name: {"type": "string"}}}
                  for name in ("experiment", "not_applicable")],
        "not": {"required": ["experiment", "not_applicable"],
                "properties": {"experiment": {"type": "string"},
                               "not_applicable": {"type": "string"}}},
    })

    experiment: RecordId | None = None
    subject: SideName | None = Field(
        default=None,
        description="the experiment's side that stands for this claim's class, where the class "
        "is none of the classes its sides declare",
    )
    not_applicable: NonEmpty | None = Field(
        default=None, max_length=400,
        description="why no single-GPU run can judge this claim, by design (shown by `claims`)",
    )
    judged_on: list[RecordId] = Field(
        default_factory=list, max_length=32,
        description="accelerator records the claim is about (a part-specific figure such as "
        "'16x on A100'): elsewhere the experiment's measurement is recorded as not-applicable",
    )

    @model_validator(mode="after")
    def _one_of(self) -> VerifyLink:
        # a link that names both would be judged and excused at once; one naming neither says
        # nothing
        if (self.experiment is None) == (self.not_applicable is None):
            raise ValueError("verify names exactly one of `experiment` and `not_applicable`")
        if self.not_applicable is not None and (self.subject is not None or self.judged_on):
            raise ValueError("`subject` and `judged_on` belong to an experiment link, not to "
                             "`not_applicable`")
        return self

    @property
    def runs(self) -> bool:
        """Whether the link names an experiment to run."""
        return self.experiment is not None


class ArchitectureValue(str, Enum):
    """A quantity computed from architecture records (`flopkb.architecture.cost`) a row names."""

    attention_share = "attention_share"  # % of layers holding an attention sublayer
    non_attention_share = "non_attention_share"  # 100 - attention_share
    linear_to_attention_ratio = "linear_to_attention_ratio"  # recurrent mixers : attention mixers
    kv_cache_ratio = "kv_cache_ratio"  # KV cache of the 2nd architecture / the 1st's (x)
    kv_cache_reduction = "kv_cache_reduction"  # % less KV cache in the 1st than the 2nd


class DerivedFrom(Strict):
    """A row's figure computed from architecture records, e.g. Jamba's 8x smaller KV cache:
    `{architectures: [jamba-1.5-mini, mixtral-8x7b], value: kv_cache_ratio, at: {context: 262144}}`.
    A share or ratio of one architecture is checked on each listed architecture; a comparison
    (kv_cache_ratio, kv_cache_reduction) takes exactly two: the model, then its baseline."""

    architectures: list[RecordId] = Field(min_length=1, max_length=8)
    value: ArchitectureValue
    at: dict[Literal["context", "batch"], Annotated[int, Field(ge=1, le=2**40)]] = Field(
        default_factory=dict, description="context length and batch of the comparison"
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
    derived_from: DerivedFrom | None = Field(
        default=None, description="the figure computed from architecture records (basis derived)"
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
    architectures: list[RecordId] = Field(
        default_factory=list,
        description="architecture records of the family's released models and of the baselines "
        "its claims compare against",
    )
    flop: Flop = Field(default_factory=Flop)
