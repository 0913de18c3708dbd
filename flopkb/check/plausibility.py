"""Forged or silly values: evidence dated in the future or before its accelerator existed, and
spec values beyond any device's scale.

Such evidence is reported here and never becomes a claim's latest verdict
(`flopkb.evidence.plausibility`, used by `flopkb.evidence.store.latest`).
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


# No datasheet figure of a device is beyond 10^24 (or below 10^-24) in any SI-prefixed unit:
# the largest, a rack's FLOP/s written in FLOP/s, is ~10^18. Figures past it are typos or
# attacks, and their quotients overflow what the commands compute from them.
SPEC_SCALE = 1e24
ABSURD_SPEC = rule(
    "FKB423", Severity.error,
    f"a spec value is beyond any device's scale (|value| above {SPEC_SCALE:.0e} or below "
    f"{1 / SPEC_SCALE:.0e} in its unit, zero excepted)",
)  # fmt: skip


@check
def spec_scales(ctx: CheckContext) -> Iterator[Finding]:
    """FKB423 over every accelerator's specs."""
    for acc_id, acc in sorted(ctx.kb.accelerators.items()):
        for qid, spec in sorted(acc.specs.items()):
            value = spec.value
            if value is None or value == 0 or 1 / SPEC_SCALE <= abs(value) <= SPEC_SCALE:
                continue
            yield ctx.finding(
                ABSURD_SPEC, acc_id, ("specs", qid, "value"),
                f"specs.{qid}: {value:g} {spec.unit} is beyond any device's scale",
                "check the figure and its unit against the source",
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
