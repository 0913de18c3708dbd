"""Sources: papers, blog posts, datasheets. Unknown identifiers stay empty, never invented."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, HttpUrl

from flopkb.model.base import URL_PATTERN, Kind, NonEmpty, RecordBase, a_number


class SourceType(str, Enum):
    paper = "paper"
    preprint = "preprint"
    blog = "blog"
    datasheet = "datasheet"
    documentation = "documentation"
    whitepaper = "whitepaper"


class SourceRecord(RecordBase):
    kind: Literal[Kind.source]
    source_type: SourceType
    authors: list[NonEmpty] = Field(default_factory=list)
    year: Annotated[int, Field(ge=1900, le=2100), BeforeValidator(a_number)] | None = None
    venue: str | None = None
    identifier: str | None = Field(
        default=None, description="e.g. arXiv:2405.21060; empty if unknown"
    )
    url: Annotated[HttpUrl, Field(json_schema_extra={"pattern": URL_PATTERN})] | None = None
    note: str | None = None
