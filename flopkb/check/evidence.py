"""Rule 6, evidence integrity: evidence names a claim and an experiment that exist and the hashes
of the kernel sources it ran; evidence whose kernels changed since is stale (a warning); every
verdict re-derives from the numbers the record stores (`flopkb.evidence.rederive`), and every
picture it lists is a file of the KB."""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.check.references import unloaded_reference
from flopkb.evidence.catalogue import Catalogue
from flopkb.evidence.declared import EXPERIMENTS_FOLDER
from flopkb.evidence.hashing import stale_evidence
from flopkb.evidence.rederive import (
    INCONSISTENT,
    LEGACY,
    MEASURING,
    MISMATCH,
    MISSING,
    UNKNOWN_REVISION,
)
from flopkb.findings import Finding, Severity
from flopkb.load.walk import display_path
from flopkb.model import EvidenceRecord

BY_PROBLEM = {MISMATCH: "FKB510", MISSING: "FKB511", LEGACY: "FKB512",
              INCONSISTENT: "FKB513", UNKNOWN_REVISION: "FKB531"}
REDERIVE_HINT = ("an evidence record is written by `flopkb verify --gpu`; run it again, or "
                 "remove the record (a claim's magnitude edited since also changes the verdict)")


def _catalogue(ctx: CheckContext) -> Catalogue:
    """The experiments this KB sees, read once per KB (every evidence record asks)."""
    return ctx.kb.catalogue()


@check
def evidence_integrity(ctx: CheckContext) -> Iterator[Finding]:
    kb = ctx.kb
    for eid, ev in sorted(kb.evidence.items()):
        yield from ctx.isolated(eid, _one_evidence(ctx, eid, ev))
    yield from _stale_and_links(ctx)
    untrusted = kb.untrusted_evidence()
    for eid in sorted(untrusted):
        yield from ctx.isolated(eid, _rederived(ctx, eid, untrusted[eid]))


def _rederived(ctx: CheckContext, eid: str, problems: list) -> Iterator[Finding]:
    """FKB510-FKB513: the record's verdicts against what its own numbers give."""
    for p in problems:
        hint = ("its verdict is not trusted: it gives no verdict and backs no `basis: measured`"
                if p.kind == LEGACY else REDERIVE_HINT)
        yield ctx.finding(BY_PROBLEM[p.kind], eid, p.path, p.message[:400], hint=hint)


def _artifacts(ctx: CheckContext, eid: str, ev: EvidenceRecord) -> Iterator[Finding]:
    """FKB514: each listed picture is a regular file in the evidence record's own folder."""
    file = ctx.kb.files.get(eid)
    if file is None:
        return
    folder = file.parent
    for i, name in enumerate(ev.artifacts):
        plain = name not in {"", ".", ".."} and "/" not in name and "\\" not in name
        path = folder / name if plain else None
        if path is None or path.is_symlink() or not path.is_file():
            why = ("is not a plain file name beside the record" if not plain
                   else "is not a regular file beside the record")
            yield ctx.finding("FKB514", eid, ("artifacts", i), f"artifact {name!r} {why}",
                              hint="verify writes the picture beside its evidence; restore it "
                              "or drop it from `artifacts`")


def _one_evidence(ctx: CheckContext, eid: str, ev: EvidenceRecord) -> Iterator[Finding]:
    """FKB501-FKB506 for one evidence record."""
    kb = ctx.kb
    if ev.claim is not None:
        found = kb.claim(ev.claim)
        if found is None:
            # a claim in a record (or row) that failed to load: FKB303, never silently dropped
            unloaded = unloaded_reference(ctx, eid, ("claim",), ev.claim, "claim")
            if unloaded is not None:
                yield unloaded
            else:
                yield ctx.finding("FKB501", eid, ("claim",),
                                  f"claim {ev.claim!r} does not exist",
                                  hint="claims are <class record id>/<row id>")
        elif (found[1].verify and found[1].verify.runs
              and found[1].verify.experiment != ev.experiment):
            yield ctx.finding("FKB506", eid, ("experiment",),
                              f"experiment {ev.experiment!r} but {ev.claim} links to "
                              f"{found[1].verify.experiment!r}")
    catalogue = _catalogue(ctx)
    if not catalogue.exists(ev.experiment):
        yield ctx.finding("FKB502", eid, ("experiment",),
                          f"no experiment {ev.experiment!r} (bundled or in the KB's experiments/)",
                          hint=f"known: {', '.join(sorted(catalogue.experiments))}")
    elif ev.claim is not None and ev.verdict.value in MEASURING:
        info = catalogue.get(ev.experiment)
        if info.runs_kb_code:
            yield ctx.finding("FKB517", eid, ("verdict",),
                              f"{ev.experiment!r} is judged by the KB's hook {info.hook!r}: "
                              "its verdicts are taken as written",
                              hint="sign evidence (`verify --sign-key`, `validate "
                              "--require-signed`) to trust who wrote it, or declare the "
                              "experiment without a hook so validate can re-derive it")
    if not ev.kernel_hashes:
        yield ctx.finding("FKB503", eid, ("kernel_hashes",),
                          "kernel_hashes is empty: the evidence cannot say what it ran")
    if ev.accelerator is not None and ev.accelerator not in kb.accelerators:
        yield ctx.finding("FKB505", eid, ("accelerator",),
                          f"{ev.accelerator!r} is not an accelerator record")
    yield from _artifacts(ctx, eid, ev)


def _broken_declaration(
    ctx: CheckContext, catalogue: Catalogue, name: str
) -> Finding | None:
    """The first error of the KB's declaration of `name` (`experiments/<name>.yaml`), which the
    catalogue left out for it; None when the KB declares no `name` at all."""
    root = ctx.kb.root
    if root is None:
        return None
    folder = root / EXPERIMENTS_FOLDER
    # the declarations' findings name their files as `display_path` shows them
    files = {display_path(folder / f"{name}{suffix}") for suffix in (".yaml", ".yml")}
    errors = [f for f in catalogue.findings
              if f.severity is Severity.error and (f.record == name or f.file in files)]
    return min(errors, key=lambda f: (f.line, f.column)) if errors else None


def _stale_and_links(ctx: CheckContext) -> Iterator[Finding]:
    """FKB504 (stale kernels) and FKB507 (a claim row links to no experiment)."""
    kb = ctx.kb
    for stale in stale_evidence(kb):
        rule_only = stale.judge and not (stale.changed or stale.added or stale.removed)
        what, where = (("the judging rule", "judge_revision") if rule_only
                       else ("kernel sources", "kernel_hashes"))
        yield ctx.finding("FKB504", stale.evidence, (where,),
                          f"{what} of {stale.experiment!r} changed since this evidence "
                          f"({stale.describe()})",
                          hint="run `flopkb verify --gpu --claim ...` again on this accelerator")
    for rec in kb.classes.values():
        for idx, row in enumerate(rec.flop.hardware_parameters):
            # the catalogue is read at the first link (a KB without links never reads it)
            if row.verify is None or not row.verify.runs:
                continue
            catalogue = _catalogue(ctx)
            if catalogue.exists(row.verify.experiment):
                continue
            cid = f"{rec.id}/{row.id}"
            where = ("flop", "hardware_parameters", idx, "verify", "experiment")
            broken = _broken_declaration(ctx, catalogue, row.verify.experiment)
            if broken is not None:
                yield ctx.finding(
                    "FKB507", rec.id, where,
                    f"{cid}: experiment {row.verify.experiment!r} is declared ({broken.file}) "
                    f"but its declaration has errors, so it is left out; the first: "
                    f"{broken.rule} at line {broken.line}: {broken.message[:200]}",
                    hint="fix the declaration: its own findings say what is wrong",
                )
                continue
            yield ctx.finding(
                "FKB507", rec.id, where,
                f"{cid}: experiment {row.verify.experiment!r} is not declared (neither bundled "
                "nor in the KB's experiments/)",
                hint=f"known: {', '.join(sorted(catalogue.experiments))}; or declare it in "
                "experiments/ (docs/verify-your-own-claim.md)",
            )
