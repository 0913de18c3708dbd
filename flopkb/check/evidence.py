"""Rule 6, evidence integrity: evidence names a claim and an experiment that exist and the hashes
of the kernel sources it ran; evidence whose kernels changed since is stale (a warning); every
verdict re-derives from the numbers the record stores (`flopkb.evidence.rederive`), and every
picture it lists is a file of the KB."""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check, rule
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

UNKNOWN_CLAIM = rule("FKB501", Severity.error, "evidence names a claim that does not exist")
UNKNOWN_EXPERIMENT = rule("FKB502", Severity.error, "evidence names an unknown experiment")
NO_HASHES = rule("FKB503", Severity.error, "evidence carries no kernel source hashes")
STALE = rule("FKB504", Severity.warning,
             "evidence is stale: its kernel sources or its experiment's judge revision changed "
             "since")
UNKNOWN_ACCELERATOR = rule("FKB505", Severity.error,
                           "evidence names an accelerator that is not an accelerator record")
CLAIM_EXPERIMENT = rule("FKB506", Severity.warning,
                        "evidence's experiment differs from the one its claim row links to")
ROW_EXPERIMENT = rule("FKB507", Severity.error,
                      "a claim row's verify.experiment names no experiment (bundled or the KB's)")
NOT_REDERIVED = rule("FKB510", Severity.error,
                     "evidence's verdict is not what its stored measurement gives")
NO_MEASUREMENT = rule("FKB511", Severity.error,
                      "evidence's verdict cannot be re-derived: it stores no measurement")
LEGACY_UNREADABLE = rule("FKB512", Severity.warning,
                         "schema 3 evidence the current experiment cannot re-read: not trusted")
INCONSISTENT_VERDICT = rule("FKB513", Severity.error,
                            "evidence's verdict, measured value or implementation-sensitive "
                            "flag disagrees with its judgements")
OWN_JUDGE = rule("FKB517", Severity.info,
                 "evidence's verdict is not re-derived: the KB's own hook judges it, and "
                 "validate never runs the KB's code")
MISSING_ARTIFACT = rule("FKB514", Severity.error,
                        "evidence lists an artifact that is not a file beside it in the KB")
UNKNOWN_JUDGE = rule("FKB531", Severity.error,
                     "evidence names a judge_revision its experiment never declared (above the "
                     "current one): it is not trusted")
BY_PROBLEM = {MISMATCH: NOT_REDERIVED, MISSING: NO_MEASUREMENT, LEGACY: LEGACY_UNREADABLE,
              INCONSISTENT: INCONSISTENT_VERDICT, UNKNOWN_REVISION: UNKNOWN_JUDGE}
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
            yield ctx.finding(MISSING_ARTIFACT, eid, ("artifacts", i), f"artifact {name!r} {why}",
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
                yield ctx.finding(UNKNOWN_CLAIM, eid, ("claim",),
                                  f"claim {ev.claim!r} does not exist",
                                  hint="claims are <class record id>/<row id>")
        elif (found[1].verify and found[1].verify.runs
              and found[1].verify.experiment != ev.experiment):
            yield ctx.finding(CLAIM_EXPERIMENT, eid, ("experiment",),
                              f"experiment {ev.experiment!r} but {ev.claim} links to "
                              f"{found[1].verify.experiment!r}")
    catalogue = _catalogue(ctx)
    if not catalogue.exists(ev.experiment):
        yield ctx.finding(UNKNOWN_EXPERIMENT, eid, ("experiment",),
                          f"no experiment {ev.experiment!r} (bundled or in the KB's experiments/)",
                          hint=f"known: {', '.join(sorted(catalogue.experiments))}")
    elif ev.claim is not None and ev.verdict.value in MEASURING:
        info = catalogue.get(ev.experiment)
        if info.runs_kb_code:
            yield ctx.finding(OWN_JUDGE, eid, ("verdict",),
                              f"{ev.experiment!r} is judged by the KB's hook {info.hook!r}: "
                              "its verdicts are taken as written",
                              hint="sign evidence (`verify --sign-key`, `validate "
                              "--require-signed`) to trust who wrote it, or declare the "
                              "experiment without a hook so validate can re-derive it")
    if not ev.kernel_hashes:
        yield ctx.finding(NO_HASHES, eid, ("kernel_hashes",),
                          "kernel_hashes is empty: the evidence cannot say what it ran")
    if ev.accelerator is not None and ev.accelerator not in kb.accelerators:
        yield ctx.finding(UNKNOWN_ACCELERATOR, eid, ("accelerator",),
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
        yield ctx.finding(STALE, stale.evidence, (where,),
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
                    ROW_EXPERIMENT, rec.id, where,
                    f"{cid}: experiment {row.verify.experiment!r} is declared ({broken.file}) "
                    f"but its declaration has errors, so it is left out; the first: "
                    f"{broken.rule} at line {broken.line}: {broken.message[:200]}",
                    hint="fix the declaration: its own findings say what is wrong",
                )
                continue
            yield ctx.finding(
                ROW_EXPERIMENT, rec.id, where,
                f"{cid}: experiment {row.verify.experiment!r} is not declared (neither bundled "
                "nor in the KB's experiments/)",
                hint=f"known: {', '.join(sorted(catalogue.experiments))}; or declare it in "
                "experiments/ (docs/verify-your-own-claim.md)",
            )
