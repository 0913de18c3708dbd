"""Every claim judged (FKB532): a claim row that no experiment judges, that nothing derives and
that says no reason why is a finding, so that `flopkb claims` shows for every claim a verdict, a
computed value or a reason.

A row is judged when its `verify` links an experiment or states `not_applicable`, or when it is
derived (`formula`, `derived_from`). A row resting on a quantity that an affected accelerator
record sets to an explicit null (Hopper's INT4 tensor rate) has its reason stated there: `claims`
and `graph status` show it not applicable on those parts (FKB603). A warning: `--strict` fails
on it, as the bundled KB's checks run.
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.check.uses import not_applicable
from flopkb.findings import Finding


def _judged(row) -> bool:
    return row.verify is not None or row.formula is not None or row.derived_from is not None


@check
def unjudged_claims(ctx: CheckContext) -> Iterator[Finding]:
    """FKB532 for every claim row nothing judges, derives or excuses."""
    bare = [(rec, index, row) for rec in ctx.kb.classes.values()
            for index, row in enumerate(rec.flop.hardware_parameters) if not _judged(row)]
    if not bare:
        return
    # only where some row is bare: the null-quantity reasons of the whole KB
    excused = not_applicable(ctx.kb)
    for rec, index, row in bare:
        cid = f"{rec.id}/{row.id}"
        if excused.get(cid):
            continue
        yield ctx.finding(
            "FKB532", rec.id, ("flop", "hardware_parameters", index),
            f"{cid}: nothing judges this claim: no experiment link, no derivation, no stated "
            "reason",
            hint="link an experiment (`verify: {experiment: ...}`, docs/verify-your-own-claim.md)"
            ", derive the figure (`formula`, `derived_from`), or say why no run can judge it "
            "(`verify: {not_applicable: ...}`)")
