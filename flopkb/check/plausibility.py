"""Forged or silly values: evidence dated in the future or before its accelerator existed.

Such evidence is reported here and never becomes a claim's latest verdict
(`flopkb.plausibility`, used by `flopkb.verify.evidence.latest`).
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb import budget
from flopkb.check.base import CheckContext, check, rule
from flopkb.findings import Finding, Severity

FUTURE_EVIDENCE = rule(
    "FKB508", Severity.error,
    f"evidence is dated in the future (beyond {budget.CLOCK_SKEW.days} day of clock skew)",
)  # fmt: skip
EVIDENCE_TOO_EARLY = rule(
    "FKB509", Severity.error,
    "evidence is dated before its accelerator existed (the earliest source the part cites)",
)  # fmt: skip


@check
def evidence_times(ctx: CheckContext) -> Iterator[Finding]:
    """FKB508/FKB509 over every evidence record."""
    rules = {"future": FUTURE_EVIDENCE, "before": EVIDENCE_TOO_EARLY}
    for eid, (kind, message) in sorted(ctx.kb.implausible_evidence().items()):
        yield ctx.finding(
            rules[kind], eid, ("timestamp",), message,
            "this evidence is ignored for the claim's verdict; fix the clock, or remove the file",
        )  # fmt: skip
