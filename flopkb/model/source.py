"""Sources: papers, blog posts, datasheets. Unknown identifiers stay empty, never invented."""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import Field, HttpUrl

from flopkb.model.base import Kind, NonEmpty, RecordBase


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
    year: int | None = Field(default=None, ge=1900, le=2100)
    venue: str | None = None
    identifier: str | None = Field(
        default=None, description="e.g. arXiv:2405.21060; empty if unknown"
    )
    url: HttpUrl | None = None
    note: str | None = None
