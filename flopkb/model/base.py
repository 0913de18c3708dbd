"""What every record has: schema version, id, kind, title, history."""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

# Version 1: the first record format (classes without `flop.hardware_parameters`).
# Version 2: `flop.hardware_parameters` rows added (the "schema authority pass").
# Version 3: evidence `judgements` and `implementation_sensitive`.
# Version 4: evidence `rounds` and `tolerance` (what the verdict is re-derived from).
# See schema/CHANGELOG.md.
CURRENT_SCHEMA_VERSION = 4
ACCEPTED_SCHEMA_VERSIONS = frozenset({1, 2, 3, 4})

ID_PATTERN = r"^[a-z0-9][a-z0-9_-]*$"
# Dates and times are the strings YAML 1.2 core gives (it has no date type). The JSON Schema
# states the same patterns, so flopkb and any other validator accept exactly the same text.
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATETIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
RecordId = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=120)]


def a_number(value: object) -> object:
    """pydantic's lax mode would read "3.5" and true as numbers; JSON Schema (and so every
    other validator of the published schema) does not: neither does flopkb."""
    if isinstance(value, (bool, str)):
        kind = "a boolean" if isinstance(value, bool) else "text"
        raise ValueError(f"expected a number, not {kind}")
    return value


# (a constraint such as Field(ge=...) goes before the validator, or the schema says "ge")
Number = Annotated[float, BeforeValidator(a_number)]
WholeNumber = Annotated[int, BeforeValidator(a_number)]
# An http(s) URL with a host, stated as a pattern too: the `uri` format alone is not asserted
# by every validator (jsonschema needs an extra package for it)
URL_PATTERN = r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#@]+"
# Text a reader needs (title, prose, effect, ...): blank or whitespace-only text is refused
# (FKB117); `\S` is also what editors check through the exported JSON Schema.
NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False, pattern=r"\S")]


class Kind(str, Enum):
    operator = "operator"
    model = "model"
    accelerator = "accelerator"
    quantity = "quantity"
    source = "source"
    evidence = "evidence"
    architecture = "architecture"


class Strict(BaseModel):
    """Base for every model: unknown fields are errors; NaN and infinities are never figures."""

    model_config = ConfigDict(extra="forbid", strict=False, frozen=True, allow_inf_nan=False)


class HistoryEntry(Strict):
    """Who changed the record, when, and what: authorship is data (agents edit the KB too)."""

    date: dt.date = Field(json_schema_extra={"pattern": DATE_PATTERN})
    by: NonEmpty
    note: NonEmpty

    @field_validator("date", mode="before")
    @classmethod
    def _written_as_text(cls, value: object) -> object:
        # pydantic alone would also take a number (a Unix time) or a date-time string
        return written_as(value, DATE_PATTERN, "a date written YYYY-MM-DD")


def written_as(value: object, pattern: str, what: str) -> object:
    """`value` when it is text in `pattern` (or already a date/time built in Python)."""
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and re.match(pattern, value):
        return value
    raise ValueError(f"expected {what}")


class SourceRef(Strict):
    """A pointer into a source record: its id and where in it (section, figure, table, page)."""

    id: RecordId
    locator: str | None = None


class RecordBase(Strict):
    schema_version: WholeNumber = Field(
        description="record format version; see schema/CHANGELOG.md"
    )
    id: RecordId
    kind: Kind
    title: NonEmpty
    history: list[HistoryEntry] = Field(min_length=1)
