"""Findings are values: collected, sorted and reported, never raised mid-run."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from flopkb.budget import ECHO_KEEP_CHARS, ECHO_MAX_CHARS, MESSAGE_MAX_CHARS


class Severity(str, Enum):
    """error fails a run; warning fails it under --strict; info is a report that never fails."""

    error = "error"
    warning = "warning"
    info = "info"


@dataclass(frozen=True)
class Finding:
    """One problem at one place: `file:line:col: RULE [record] message (hint: ...)`.

    `line` and `column` are 1-based; 0 means the whole file (e.g. it could not be read).
    What it echoes of the record is cut (`cut`): a record id longer than ECHO_MAX_CHARS is shown
    cut, with the whole id kept once in `full_record` (JSON reports list it once per run).
    """

    rule: str
    severity: Severity
    file: str
    line: int
    column: int
    record: str | None
    message: str
    hint: str | None = None
    full_record: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # frozen: the cut values are set once here, so no report path can print the raw ones
        if self.record is not None and len(self.record) > ECHO_MAX_CHARS:
            object.__setattr__(self, "full_record", self.record)
            object.__setattr__(self, "record", cut(self.record))
        object.__setattr__(self, "message", cut_words(self.message))
        if self.hint is not None:
            object.__setattr__(self, "hint", cut_words(self.hint))

    @property
    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.rule, self.message)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        del data["full_record"]
        return data


def cut(text: str, keep: int = ECHO_KEEP_CHARS) -> str:
    """`text` itself, or its first `keep` characters and its length: `aaaa…(1000000 chars)`."""
    return text if len(text) <= ECHO_MAX_CHARS else f"{text[:keep]}…({len(text)} chars)"


_LONG_WORD = re.compile(rf"\S{{{ECHO_MAX_CHARS + 1},}}")


def cut_words(text: str) -> str:
    """`text` with each word longer than ECHO_MAX_CHARS cut, then the whole cut to
    MESSAGE_MAX_CHARS: a message echoing a huge value keeps its sense and a bounded size."""
    if len(text) <= ECHO_MAX_CHARS:
        return text
    text = _LONG_WORD.sub(lambda m: cut(m.group()), text)
    if len(text) > MESSAGE_MAX_CHARS:
        text = f"{text[:MESSAGE_MAX_CHARS - 40]}…({len(text)} chars)"
    return text


def full_records(findings: list[Finding]) -> dict[str, str]:
    """cut id -> the whole id, once each, for the ids findings show cut."""
    return {f.record: f.full_record for f in findings if f.full_record and f.record}


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Stable order for reports and golden tests: by file, line, column, rule."""
    return sorted(set(findings), key=lambda f: f.sort_key)
