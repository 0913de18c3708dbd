"""Forged or silly values: evidence dated in the future or before its accelerator existed, and
spec values beyond any device's scale.

Such evidence is reported here and never becomes a claim's latest verdict
(`flopkb.evidence.plausibility`, used by `flopkb.evidence.store.latest`).
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding

# No datasheet figure of a device is beyond 10^24 (or below 10^-24) in any SI-prefixed unit:
# the largest, a rack's FLOP/s written in FLOP/s, is ~10^18. Figures past it are typos or
# attacks, and their quotients overflow what the commands compute from them.
SPEC_SCALE = 1e24


@check
def spec_scales(ctx: CheckContext) -> Iterator[Finding]:
    """FKB423 over every accelerator's specs."""
    for acc_id, acc in sorted(ctx.kb.accelerators.items()):
        for qid, spec in sorted(acc.specs.items()):
            value = spec.value
            if value is None or value == 0 or 1 / SPEC_SCALE <= abs(value) <= SPEC_SCALE:
                continue
            yield ctx.finding(
                "FKB423", acc_id, ("specs", qid, "value"),
                f"specs.{qid}: {value:g} {spec.unit} is beyond any device's scale",
                "check the figure and its unit against the source",
            )  # fmt: skip


@check
def evidence_times(ctx: CheckContext) -> Iterator[Finding]:
    """FKB508/FKB509 over every evidence record."""
    rules = {"future": "FKB508", "before": "FKB509"}
    for eid, (kind, message) in sorted(ctx.kb.implausible_evidence().items()):
        yield ctx.finding(
            rules[kind], eid, ("timestamp",), message,
            "this evidence is ignored for the claim's verdict; fix the clock, or remove the file",
        )  # fmt: skip
