"""Evidence: one measurement of one claim on one machine, written by `flopkb verify`."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Any, Literal

from pydantic import AwareDatetime, Field, field_validator, model_validator

from flopkb.model.base import (
    DATETIME_PATTERN,
    Kind,
    NonEmpty,
    Number,
    RecordBase,
    RecordId,
    Strict,
    written_as,
)

# Independent rounds one combination may store, and all combinations of one record together:
# verify takes 3 (`flopkb.evidence.rounds.ROUNDS`); the bound keeps what validate merges and
# judges again small whatever a record says.
MAX_ROUNDS = 64
MAX_ROUNDS_PER_RECORD = 256


class Verdict(str, Enum):
    confirmed = "confirmed"
    refuted = "refuted"
    inconclusive = "inconclusive"
    not_applicable = "not-applicable"
    error = "error"
    not_run = "not-run"


class Measured(Strict):
    """The measured quantity with its uncertainty interval (None bounds are open)."""

    value: Number | None
    low: Number | None = None
    high: Number | None = None
    unit: str
    what: str | None = Field(default=None, description="what the number is, in words")


class Round(Strict):
    """One independent round of one implementation combination (schema 4): what the
    experiment's `judge` reads, per round. The record's `statistics.data` and `sweep` are these
    rounds merged by `flopkb.evidence.rounds.merge_rounds`; `flopkb validate` merges and judges them
    again and compares the verdict."""

    data: dict[str, Any] = Field(default_factory=dict)
    sweep: list[dict[str, Any]] = Field(default_factory=list)


class Judged(Strict):
    """The verdict of one implementation combination (which code ran each side)."""

    combination: dict[str, str] = Field(description="side -> implementation name (impls.py)")
    implementations: dict[str, str] = Field(
        default_factory=dict, description="side -> exactly what ran: library, version, entry point"
    )
    verdict: Verdict
    measured: Measured | None = None
    reason: str | None = None
    rounds: list[Round] = Field(
        default_factory=list, max_length=MAX_ROUNDS,
        description="schema 4: this combination's rounds (the first judgement's are the record's "
        "`rounds`)",
    )


class EvidenceRecord(RecordBase):
    kind: Literal[Kind.evidence]
    claim: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9_-]*/[a-z0-9][a-z0-9-]*$",
        description="<record>/<row>; empty for a calibration of the accelerator's ceilings",
    )
    experiment: RecordId
    accelerator: RecordId | None = Field(description="accelerator record the GPU matched, if any")
    implementation: NonEmpty = Field(
        description="what ran for the verdict: the sides' implementations of the first judgement"
    )
    judgements: list[Judged] = Field(
        default_factory=list,
        description="one verdict per implementation combination run (schema 3); the first is the "
        "one `verdict` reports",
    )
    implementation_sensitive: bool = Field(
        default=False,
        description="the verdict changes with the implementation: the combinations that measured "
        "disagree",
    )
    kernel_hashes: dict[str, str] = Field(description="kernel source path -> sha256")
    judge_revision: int = Field(
        default=1, ge=1, le=1_000_000,
        description="the experiment's judge_revision this verdict was read under (absent: 1)",
    )
    machine: dict[str, Any]
    conditions: dict[str, Any] = Field(default_factory=dict)
    statistics: dict[str, Any] = Field(default_factory=dict, description="raw timing statistics")
    measured: Measured | None = None
    expected: dict[str, Any] | None = None
    verdict: Verdict
    applicable_verdict: Verdict | None = Field(
        default=None,
        description="the verdict the measurement gives, kept when `verdict` is not-applicable",
    )
    reason: str | None = None
    criterion: str | None = Field(default=None, description="how the magnitude was read")
    correctness: list[dict[str, Any]] = Field(
        default_factory=list, description="each kernel checked against its reference before timing"
    )
    ceilings: dict[str, Any] = Field(
        default_factory=dict, description="measured ceilings the roofline floors came from"
    )
    sweep: list[dict[str, Any]] = Field(
        default_factory=list, description="per-point results over the swept axis"
    )
    command: NonEmpty
    timestamp: AwareDatetime = Field(
        description="when it ran, with a UTC offset (stored as UTC)",
        json_schema_extra={"pattern": DATETIME_PATTERN},
    )
    duration_s: Number | None = None
    artifacts: list[str] = Field(default_factory=list, description="plots beside this file")
    rounds: list[Round] = Field(
        default_factory=list, max_length=MAX_ROUNDS,
        description="schema 4: the verdict's combination measured in independent rounds",
    )
    tolerance: dict[str, Number] | None = Field(
        default=None,
        description="schema 4: the tolerances the verdict was decided with (flopkb.evidence.stats)",
    )

    @field_validator("timestamp", mode="before")
    @classmethod
    def _written_as_text(cls, value: object) -> object:
        what = "an RFC 3339 date-time with a timezone offset, e.g. 2026-11-30T03:48:36Z"
        return written_as(value, DATETIME_PATTERN, what)

    @field_validator("timestamp")
    @classmethod
    def _as_utc(cls, value: dt.datetime) -> dt.datetime:
        # one time zone, so evidence from many machines orders correctly (also as ISO text)
        try:
            return value.astimezone(dt.timezone.utc)
        except OverflowError:
            # 9999-12-31T23:59:59-01:00 is in year 10000 in UTC: kept with its own offset (aware
            # datetimes still order correctly), and reported as a time from the future (FKB508)
            return value

    @model_validator(mode="after")
    def _rounds_bounded(self) -> EvidenceRecord:
        total = len(self.rounds) + sum(len(j.rounds) for j in self.judgements)
        if total > MAX_ROUNDS_PER_RECORD:
            raise ValueError(f"expected at most {MAX_ROUNDS_PER_RECORD} rounds in one record "
                             f"(rounds and every judgement's together), got {total}")
        return self
