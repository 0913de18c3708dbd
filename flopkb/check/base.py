"""The check interface: checks that turn a loaded KB into findings, each of a stable rule code.

A check is a function `(CheckContext) -> Iterable[Finding]` registered with `@check`; it reports
findings by rule code, each declared once in the catalogue (flopkb/rules.yaml, `flopkb.rules`).
Rule code ranges: FKB1xx loading and structure, FKB2xx provenance, FKB3xx references,
FKB4xx formulas, units and hardware, FKB5xx evidence, FKB6xx graph, FKB9xx architecture records
and the model-level figures computed from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flopkb.findings import Finding
from flopkb.kb import KnowledgeBase
from flopkb.rules import finding_of


@dataclass
class CheckContext:
    """What every check of one run sees: the KB, and values the checks build once and share."""

    kb: KnowledgeBase
    shared: dict[str, Any] = field(default_factory=dict)

    def finding(
        self,
        code: str,
        record_id: str,
        path: tuple[str | int, ...],
        message: str,
        hint: str | None = None,
    ) -> Finding:
        """A finding of rule `code` at the YAML node `path` of record `record_id` (or its nearest
        parent)."""
        file, line, column = self.kb.where(record_id, *path)
        return finding_of(code, file, line, column, record_id, message, hint)

    def isolated(self, record_id: str, findings: Iterable[Finding]) -> Iterator[Finding]:
        """The findings of one record's checks; an exception there (a bug in flopkb that some
        record content trips) is an FKB199 finding of that record, and the check goes on with
        the next record: one record never hides the findings of the others."""
        try:
            yield from findings
        except Exception as exc:
            yield finding_of(
                "FKB199", self.kb.file_of(record_id), 0, 0, record_id,
                f"internal error while checking this record: {type(exc).__name__}: "
                f"{str(exc)[:200]}",
                "this is a bug in flopkb, not in the records; please report it",
            )  # fmt: skip


Check = Callable[[CheckContext], Iterable[Finding]]
CHECKS: list[Check] = []


def check(fn: Check) -> Check:
    """Register a check; it runs once over the whole KB (validators built once, not per file)."""
    CHECKS.append(fn)
    return fn
