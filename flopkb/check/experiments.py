"""Experiments as data: the KB's experiment declarations (FKB520-FKB526, and the schema codes
FKB12x at their nodes), and typed links from claim rows to experiments (FKB527, FKB528).

A link is typed: the row's magnitude form must be a quantity the experiment produces, and the
row's class must be one its sides stand for (or the link names the side: `subject`).
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.check.evidence import _catalogue
from flopkb.evidence import links
from flopkb.evidence.catalogue import Catalogue
from flopkb.evidence.declared import EXPERIMENTS_FOLDER
from flopkb.findings import Finding
from flopkb.grammar.magnitude import MagnitudeError, parse_magnitude


def _linked(ctx: CheckContext) -> bool:
    return any(row.verify is not None and row.verify.runs for _, _, row in ctx.kb.claims())


@check
def experiment_declarations(ctx: CheckContext) -> Iterator[Finding]:
    """The findings of reading and checking the KB's own `experiments/` declarations."""
    root = ctx.kb.root
    # a KB without experiments/ declares nothing: the bundled catalogue is not even read
    if root is None or not (root / EXPERIMENTS_FOLDER).is_dir():
        return
    yield from _catalogue(ctx).findings


@check
def typed_links(ctx: CheckContext) -> Iterator[Finding]:
    """FKB527 / FKB528 for every claim row linking an experiment that exists."""
    if not _linked(ctx):
        return
    catalogue = _catalogue(ctx)
    for rec in ctx.kb.classes.values():
        yield from ctx.isolated(rec.id, _record_links(ctx, catalogue, rec))


def _record_links(ctx: CheckContext, catalogue: Catalogue, rec) -> Iterator[Finding]:
    for idx, row in enumerate(rec.flop.hardware_parameters):
        link = row.verify
        if link is None or not link.runs:
            continue
        for ai, acc in enumerate(link.judged_on):
            if acc not in ctx.kb.accelerators:
                # a misspelt part would make the claim not-applicable everywhere, silently
                yield ctx.finding("FKB529", rec.id,
                                  ("flop", "hardware_parameters", idx, "verify", "judged_on", ai),
                                  f"{rec.id}/{row.id}: judged_on names {acc!r}, which is no "
                                  "accelerator record",
                                  hint="an accelerator id is a file stem in records/accelerators/")
        if not catalogue.exists(link.experiment):
            continue
        info = catalogue.get(link.experiment)
        decl = info.declaration
        if decl is None:
            continue
        where = ("flop", "hardware_parameters", idx, "verify")
        cid = f"{rec.id}/{row.id}"
        try:
            mag = parse_magnitude(row.magnitude)
        except MagnitudeError:
            # FKB203 reports it; nothing to type
            mag = None
        why = links.magnitude_mismatch(decl, mag) if mag is not None else None
        if why:
            yield ctx.finding("FKB527", rec.id, (*where, "experiment"),
                              f"{cid}: {link.experiment!r} cannot judge this magnitude: {why}",
                              hint="link an experiment that measures what the claim quotes, or "
                              "declare one in the KB's experiments/ "
                              "(docs/verify-your-own-claim.md)")
        why = links.subject_mismatch(decl, rec.id, link.subject)
        if why:
            sides = ", ".join(s.name for s in decl.sides) or "none"
            yield ctx.finding("FKB528", rec.id,
                              (*where, "subject" if link.subject else "experiment"),
                              f"{cid}: {link.experiment!r} does not measure this claim: {why}",
                              hint=f"if one of its sides ({sides}) stands for {rec.id}, say "
                              "which: `verify: {experiment: ..., subject: <side>}`")
