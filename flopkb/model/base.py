"""What every record has: schema version, id, kind, title, history."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

# Version 1: the first record format (classes without `flop.hardware_parameters`).
# Version 2: `flop.hardware_parameters` rows added (the "schema authority pass").
# See schema/CHANGELOG.md.
CURRENT_SCHEMA_VERSION = 3
ACCEPTED_SCHEMA_VERSIONS = frozenset({1, 2, 3})

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
RecordId = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=120)]
NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]


class Kind(str, Enum):
    operator = "operator"
    model = "model"
    accelerator = "accelerator"
    quantity = "quantity"
    source = "source"
    evidence = "evidence"


class Strict(BaseModel):
    """Base for every model: unknown fields are errors; NaN and infinities are never figures."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True, allow_inf_nan=False)


class HistoryEntry(Strict):
    """Who changed the record, when, and what: authorship is data (agents edit the KB too)."""

    date: dt.date
    by: NonEmpty
    note: NonEmpty


class SourceRef(Strict):
    """A pointer into a source record: its id and where in it (section, figure, table, page)."""

    id: RecordId
    locator: str | None = None


class RecordBase(Strict):
    schema_version: int = Field(description="record format version; see schema/CHANGELOG.md")
    id: RecordId
    kind: Kind
    title: NonEmpty
    history: list[HistoryEntry] = Field(min_length=1)
