"""Findings are values: collected, sorted and reported, never raised mid-run."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """error fails a run; warning fails it under --strict; info is a report that never fails."""

    error = "error"
    warning = "warning"
    info = "info"


@dataclass(frozen=True)
class Finding:
    """One problem at one place: `file:line:col: RULE [record] message (hint: ...)`.

    `line` and `column` are 1-based; 0 means the whole file (e.g. it could not be read).
    """

    rule: str
    severity: Severity
    file: str
    line: int
    column: int
    record: str | None
    message: str
    hint: str | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.rule, self.message)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.value
        return data


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Stable order for reports and golden tests: by file, line, column, rule."""
    return sorted(set(findings), key=lambda f: f.sort_key)
