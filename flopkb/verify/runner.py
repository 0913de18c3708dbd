"""Runs experiments: the plan (claims -> experiments), the CPU check mode, the GPU run with
calibration, machine matching, verdicts, evidence and plots, and sharding over torchrun ranks.

The library never prints: progress goes through the `on_event(kind, payload)` callback.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from flopkb.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.model import (
    ClassRecord,
    EvidenceRecord,
    HardwareParameter,
    HistoryEntry,
    Judged,
    Measured,
)
from flopkb.model.base import CURRENT_SCHEMA_VERSION
from flopkb.verify import evidence as ev_io
from flopkb.verify import impls, links, registry
from flopkb.verify.hashing import current_hashes
from flopkb.verify.rederive import implementation_sensitive
from flopkb.verify.stats import tolerances

T = TypeVar("T")
Event = Callable[[str, dict[str, Any]], None]
CALIBRATION = "calibration"


class NoGpuError(RuntimeError):
    """`--gpu` was asked for on a machine without a usable CUDA GPU."""


@dataclass
class Target:
    """One claim row linked to an experiment, with its magnitude parsed (or the parse error)."""

    claim: str
    record: ClassRecord
    row: HardwareParameter
    magnitude: Magnitude | None
    magnitude_error: str | None = None


@dataclass
class Job:
    experiment: str
    targets: list[Target] = field(default_factory=list)


@dataclass
class Result:
    claim: str | None
    experiment: str
    verdict: str
    measured: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    evidence: str | None = None
    reason: str | None = None
    conditions: dict[str, Any] | None = None
    criterion: str | None = None
    cpu_check: list[dict[str, Any]] | None = None
    duration_s: float | None = None
    judgements: list[dict[str, Any]] | None = None
    implementation_sensitive: bool = False

    def as_dict(self) -> dict[str, Any]:
        data = {"claim": self.claim, "experiment": self.experiment, "verdict": self.verdict,
                "measured": self.measured, "expected": self.expected, "evidence": self.evidence,
                "reason": self.reason, "conditions": self.conditions, "criterion": self.criterion}
        if self.cpu_check is not None:
            data["cpu_check"] = self.cpu_check
        if self.duration_s is not None:
            data["duration_s"] = round(self.duration_s, 2)
        if self.judgements is not None:
            data["judgements"] = self.judgements
            data["implementation_sensitive"] = self.implementation_sensitive
        return data


def _noop(kind: str, payload: dict[str, Any]) -> None:
    return None


def shard(items: Sequence[T], rank: int, world: int) -> list[T]:
    """Items i with i % world == rank: the torchrun partition (every rank computes the same one)."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"expected 0 <= rank < world, got rank {rank} of {world}")
    return [item for i, item in enumerate(items) if i % world == rank]


def catalogue(kb_root: Path | None) -> registry.Catalogue:
    """The experiments a run on the KB at `kb_root` sees (bundled, then the KB's own)."""
    return registry.for_kb(kb_root)


def plan(kb, claim: str | None = None, record: str | None = None,
         suites: Collection[str] | None = None) -> tuple[list[Job], list[Result]]:
    """Jobs (one per experiment, in catalogue order, with the claims of this KB linking to it)
    and results for what cannot run (an unknown experiment; with `claim`, a claim that links
    none). `claim` / `record` narrow the selection; `suites` (None: every suite) keeps the
    experiments of those suites, except where `claim` or `record` names what to run."""
    known = catalogue(kb.root)
    jobs: dict[str, Job] = {}
    broken: list[Result] = []
    for cid, rec, row in kb.claims():
        if claim is not None and cid != claim:
            continue
        if record is not None and rec.id != record:
            continue
        if row.verify is None:
            if claim is not None:
                broken.append(Result(cid, "-", "not-run", reason=(
                    f"{cid} links no experiment (no `verify:` in its row): nothing to run")))
            continue
        if not row.verify.runs:
            if claim is not None:
                broken.append(Result(cid, "-", "not-applicable", reason=(
                    f"{cid} is not verifiable on one GPU by design: {row.verify.not_applicable}")))
            continue
        name = row.verify.experiment
        if not known.exists(name):
            broken.append(Result(cid, name, "error", reason=(
                f"no experiment {name!r}, bundled or in the KB's experiments/ (see validate)")))
            continue
        try:
            mag, err = parse_magnitude(row.magnitude), None
        except MagnitudeError as exc:
            mag, err = None, str(exc)
        # a mistyped link is never judged by whatever its experiment happens to measure
        mistyped = links.link_problem(known.get(name).declaration, rec.id, row.verify.subject,
                                      mag)
        if mistyped:
            broken.append(Result(cid, name, "error", reason=mistyped))
            continue
        if (suites is not None and claim is None and record is None
                and known.get(name).suite not in suites):
            continue
        jobs.setdefault(name, Job(name)).targets.append(Target(cid, rec, row, mag, err))
    ordered = [jobs[name] for name in known.experiments if name in jobs]
    return ordered, broken


def unlinked(kb) -> list[str]:
    """The KB's own experiments no claim row of it links to (calibration excepted): checked on
    the CPU beside the plan. Bundled experiments belong to the bundled KB: a run on another KB
    neither runs nor reports them."""
    linked = {row.verify.experiment for _, _, row in kb.claims()
              if row.verify is not None and row.verify.runs}
    own = catalogue(kb.root).own(kb.root)
    return [n for n in own if n != CALIBRATION and n not in linked]


def experiment_module(name: str, kb_root: Path | None = None,
                      known: registry.Catalogue | None = None):
    """What runs experiment `name`: its hook module (bundled, or a module below the KB's
    kernels/), or the declaration-only runner. `known`: the KB's catalogue, when the caller
    holds it (re-derivation asks per evidence record)."""
    info = (catalogue(kb_root) if known is None else known).get(name)
    if info.hook is None:
        from flopkb.verify.experiments.generic import DeclaredExperiment

        assert info.declaration is not None
        return DeclaredExperiment(info.declaration, kb_root)
    module, _, attr = info.hook.partition(":")
    if module.startswith(registry.BUNDLED_HOOKS):
        loaded = importlib.import_module(module)
    else:
        from flopkb.kernelpkg import load_module
        from flopkb.verify.hashing import kernels_root

        loaded = load_module(module, kernels_root(kb_root, module.split(".")[0]))
    hook = getattr(loaded, attr) if attr else loaded
    point = info.declaration.point if info.declaration is not None else {}
    return _WithPoint(hook, point) if point else hook


class _WithPoint:
    """A hook whose DEFAULTS the declaration's `point` completes: the claim's conditions are data
    in the declaration, and several declarations share one hook's code."""

    def __init__(self, hook: Any, point: dict[str, Any]) -> None:
        self._hook = hook
        self.DEFAULTS = {**getattr(hook, "DEFAULTS", {}), **point}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hook, name)


def match_accelerator(kb, gpu_name: str | None) -> str | None:
    """The accelerator record whose `match` regexes (case-insensitive) match the GPU name.

    Patterns are compiled under `flopkb.matching`'s bounds: one that validation refuses (FKB420)
    matches nothing here, and matching never raises.
    """
    from flopkb.matching import matches

    if not gpu_name:
        return None
    for acc_id, acc in sorted(kb.accelerators.items()):
        if matches(acc.match, gpu_name):
            return acc_id
    return None


def not_applicable(kb, acc_id: str | None, target: Target) -> str | None:
    """Why `target` does not apply on this accelerator, or None when it does."""
    if acc_id is None:
        return "the GPU matched no accelerator record"
    if acc_id not in target.record.affected_by_hardware:
        return f"{acc_id} is not in {target.record.id}'s affected_by_hardware"
    judged_on = target.row.verify.judged_on
    if judged_on and acc_id not in judged_on:
        # a part-specific figure: this part's own measurement is kept, never judged against it
        return (f"the claim is about {', '.join(judged_on)} (verify.judged_on); {acc_id}'s own "
                "measurement is recorded, not judged")
    from flopkb.hardware import HardwareModel, claim_inputs

    acc = kb.accelerators.get(acc_id)
    info = catalogue(kb.root).get(target.row.verify.experiment)
    # the row's quantity closed over computed quantities (and a derived row's formula), as the
    # validator's FKB603 reads it, plus what the experiment itself needs from the part
    needed = claim_inputs(HardwareModel(kb), target.row) | set(info.needs)
    for quantity in sorted(needed):
        spec = acc.specs.get(quantity) if acc else None
        if spec is not None and spec.value is None:
            return f"{acc_id} has no {quantity}" + (f" ({spec.note})" if spec.note else "")
    return None


# ----- CPU plan mode -----


def run_cpu(kb_root: Path | None, jobs: list[Job], extra: Sequence[str] = (),
            on_event: Event = _noop) -> list[Result]:
    """Check every experiment's kernels against their references on the CPU (Triton interpreter)
    and describe the plan; verdict `not-run`. `extra`: experiments to check with no claim."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from flopkb.verify.context import Context

    names = [CALIBRATION] + [j.experiment for j in jobs] + [n for n in extra]
    checked: dict[str, list[dict[str, Any]]] = {}
    on_event("start", {"total": len(names)})
    for name in names:
        ctx = Context(gpu=False, kb_root=kb_root)
        ctx.begin(catalogue(kb_root).get(name).time_limit_s)
        try:
            experiment_module(name, kb_root).cpu_check(ctx)
        except Exception as exc:
            # any failure of one experiment's check is recorded; the plan goes on
            ctx.checks.append({"kernel": name, "ok": False,
                               "error": f"{type(exc).__name__}: {exc}"})
        checked[name] = ctx.checks
        on_event("advance", {"experiment": name})
    results = [Result(None, CALIBRATION, "not-run", reason="no GPU: CPU check only",
                      cpu_check=checked[CALIBRATION])]
    for job in jobs:
        mod = experiment_module(job.experiment, kb_root)
        from flopkb.verify.experiments._common import resolve

        for t in job.targets:
            cond, notes = resolve(mod.DEFAULTS, t.row.conditions,
                                  getattr(mod, "PASSES", ("forward",)))
            if t.row.verify.judged_on:
                notes.append(f"judged on {', '.join(t.row.verify.judged_on)} only "
                             "(not-applicable elsewhere)")
            results.append(Result(
                t.claim, job.experiment, "not-run",
                expected=t.magnitude.as_dict() if t.magnitude else None,
                reason="; ".join(["no GPU: CPU check only", *notes]),
                conditions=cond, criterion=catalogue(kb_root).get(job.experiment).criterion,
                cpu_check=checked[job.experiment]))
    for name in extra:
        results.append(Result(None, name, "not-run", reason="no claim links this experiment",
                              cpu_check=checked[name]))
    return results


# ----- GPU mode -----


@dataclass
class Session:
    """What one GPU run shares between experiments."""

    kb: Any
    kb_root: Path | None
    out_dir: Path
    accelerator: str | None
    machine: dict[str, Any]
    command: str
    quick: bool
    impl: str
    write: bool = True
    # conditions every evidence record of the run carries (portable paths, a memory budget)
    run_conditions: dict[str, Any] = field(default_factory=dict)
    # independent rounds per claim point (flopkb.verify.rounds) and the key evidence is signed
    # with (flopkb.verify.signing), if any
    rounds: int = 1
    sign_key: Path | None = None

    def save(self, record: EvidenceRecord) -> None:
        """Write `record` (and its signature, with a key) when this run writes evidence."""
        if not self.write:
            return
        path = ev_io.write_evidence(record, self.out_dir)
        if self.sign_key is not None:
            from flopkb.verify import signing

            signing.sign(record, path, self.sign_key)


def _error_reason(exc: BaseException) -> str:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return f"out of device memory: {str(exc).splitlines()[0]}"
    from flopkb.verify.context import ExperimentError

    if isinstance(exc, ExperimentError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _free_memory() -> None:
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()


def _evidence(s: Session, *, claim: str | None, experiment: str, implementation: str,
              hashes: dict[str, str], cond: dict[str, Any], stats: dict[str, Any],
              measured: Measured | None, expected: dict[str, Any] | None, verdict: str,
              applicable: str | None, reason: str | None, criterion: str | None,
              checks: list[dict[str, Any]], ceilings: dict[str, Any], sweep: list[dict[str, Any]],
              duration: float, artifacts: list[str], judgements: list[Judged] | None = None,
              sensitive: bool = False, rounds: list[dict[str, Any]] | None = None
              ) -> EvidenceRecord:
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    eid = ev_io.unique_id(s.out_dir, ev_io.evidence_id(claim, s.accelerator, now))
    title = (f"{claim} on {s.accelerator or 'unknown GPU'}: {verdict}" if claim
             else f"Measured ceilings of {s.accelerator or 'unknown GPU'}")
    return EvidenceRecord(
        schema_version=CURRENT_SCHEMA_VERSION, id=eid, kind="evidence", title=title,
        history=[HistoryEntry(date=now.date(), by="flopkb verify",
                              note=f"written by: {s.command}")],
        claim=claim, experiment=experiment, accelerator=s.accelerator,
        implementation=implementation, kernel_hashes=hashes,
        judge_revision=catalogue(s.kb_root).get(experiment).judge_revision, machine=s.machine,
        conditions=_jsonable(cond), statistics=_jsonable(stats), measured=measured,
        expected=expected, verdict=verdict, applicable_verdict=applicable, reason=reason,
        criterion=criterion, correctness=_jsonable(checks), ceilings=ceilings,
        sweep=_jsonable(sweep), command=s.command, timestamp=now, duration_s=round(duration, 2),
        artifacts=artifacts, judgements=judgements or [], implementation_sensitive=sensitive,
        rounds=rounds or [], tolerance=tolerances() if claim is not None else None,
    )


def _jsonable(value: Any) -> Any:
    """Plain JSON types only (floats rounded to 6 significant digits, inf/nan as strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return float(f"{value:.6g}")
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)


def _measured(j) -> Measured | None:
    if j is None or j.measured is None:
        return None
    r = lambda x: None if x is None else float(f"{x:.6g}")  # noqa: E731
    return Measured(value=r(j.measured.value), low=r(j.measured.low), high=r(j.measured.high),
                    unit=j.unit, what=j.what or None)


def _plot(s: Session, record: EvidenceRecord, spec: dict[str, Any] | None) -> EvidenceRecord:
    """Draw the claim's picture beside its evidence, named like it; the record lists it."""
    if not s.write or spec is None:
        return record
    from flopkb.verify import plots

    name = f"{record.id}.png"
    path = plots.render(spec, record.sweep, s.out_dir / name, plots.ClaimView.of(record))
    return record.model_copy(update={"artifacts": [name]}) if path else record


def _calibrate(s: Session, ctx, on_event: Event) -> Result:
    from flopkb.verify.context import Ceilings

    mod = experiment_module(CALIBRATION, s.kb_root)
    hashes = current_hashes(s.kb_root, CALIBRATION)
    started = time.monotonic()
    ctx.begin(catalogue(s.kb_root).get(CALIBRATION).time_limit_s)
    m, verdict, reason, measured = None, "error", None, None
    try:
        m = mod.measure(ctx, dict(mod.DEFAULTS))
        # The ceiling is the best sustained rate (p10 time), not the median: a kernel may
        # legitimately match the peak GEMM's better repetitions.
        ctx.ceilings = Ceilings(m.data["bf16_tflops_high"], m.data["copy_gbps_high"],
                                "measured in this run (calibration, p10 times)")
        verdict, reason = _check_ceilings(s, ctx.ceilings)
        if verdict == "error":
            # a ceiling above the datasheet is a broken timer: floors come from the datasheet
            ctx.ceilings = _datasheet_ceilings(s)
        measured = Measured(value=round(m.data["bf16_tflops"], 2),
                            low=round(m.data["bf16_tflops_low"], 2),
                            high=round(m.data["bf16_tflops_high"], 2), unit="TFLOP/s",
                            what=f"bf16 GEMM peak (cuBLAS 8192^3, random); device copy "
                            f"{m.data['copy_gbps']:.0f} GB/s read+write")
    except Exception as exc:
        reason = _error_reason(exc)
        ctx.ceilings = _datasheet_ceilings(s)
    record = _evidence(
        s, claim=None, experiment=CALIBRATION, implementation="bundled", hashes=hashes,
        cond=dict(mod.DEFAULTS), stats={"timings": ctx.timings, "data": m.data if m else {}},
        measured=measured, expected=None, verdict=verdict, applicable=None, reason=reason,
        criterion="ceilings within (0.5, 1.05] x the accelerator's datasheet figures",
        checks=ctx.checks, ceilings=ctx.ceilings.as_dict() if ctx.ceilings else {}, sweep=[],
        duration=time.monotonic() - started, artifacts=[])
    s.save(record)
    on_event("result", {"experiment": CALIBRATION, "verdict": verdict})
    measured_dict = record.measured.model_dump() if record.measured else None
    return Result(None, CALIBRATION, verdict, measured_dict,
                  None, record.id if s.write else None, reason, dict(mod.DEFAULTS),
                  duration_s=record.duration_s)


def _spec(s: Session, qid: str) -> float | None:
    acc = s.kb.accelerators.get(s.accelerator) if s.accelerator else None
    spec = acc.specs.get(qid) if acc else None
    return spec.value if spec is not None else None


def _check_ceilings(s: Session, c) -> tuple[str, str | None]:
    """Measured ceilings against the datasheet: above it means a broken timer (error)."""
    from flopkb.verify.stats import ceiling_verdict

    return ceiling_verdict(c.bf16_tflops, c.copy_gbps, _spec(s, "bf16_tensor_flops"),
                           _spec(s, "hbm_bandwidth"))


def _datasheet_ceilings(s: Session):
    from flopkb.verify.context import Ceilings

    flops, bw = _spec(s, "bf16_tensor_flops"), _spec(s, "hbm_bandwidth")
    if flops is None or bw is None:
        return None
    return Ceilings(flops, bw * 1000, "datasheet (calibration failed)")


def _measure(s: Session, ctx, job: Job, mod, cond: dict[str, Any], combo: impls.Combination,
             primary: bool, round_index: int = 0) -> dict[str, Any]:
    """Run `measure` once for one implementation combination in one round. Combinations past the
    first sweep as --quick does (the claim's own points), with full repetitions: the verdict is
    read there."""
    from flopkb.verify.context import ExperimentError, PeerUnavailable

    info = catalogue(s.kb_root).get(job.experiment)
    started = time.monotonic()
    # a peer's first calls compile and autotune its kernels (mamba_ssm's take tens of seconds):
    # combinations past the first get twice the limit for that
    ctx.begin(info.time_limit_s * (1 if primary else 2))
    ctx.impls, quick = dict(combo), ctx.quick
    ctx.quick = s.quick or not primary
    ctx.round = round_index
    entry: dict[str, Any] = {"m": None, "error": None, "unavailable": None, "combo": dict(combo)}
    try:
        if ctx.ceilings is None:
            raise ExperimentError("no ceilings (calibration failed, no datasheet): "
                                  "timings cannot be checked against a roofline floor")
        entry["m"] = mod.measure(ctx, cond)
    except PeerUnavailable as exc:
        entry["unavailable"] = str(exc)
    except Exception as exc:
        entry["error"] = _error_reason(exc)
        _free_memory()
    finally:
        ctx.quick = quick
        ctx.round = 0
    entry.update(timings=dict(ctx.timings), checks=list(ctx.checks), notes=list(ctx.notes),
                 described=dict(ctx.described), duration=time.monotonic() - started)
    return entry


def _judge(mod, t: Target, entry: dict[str, Any], cond: dict[str, Any]):
    """(verdict, reason, judgement or None) of one combination's measurement."""
    if entry["unavailable"]:
        return "not-run", entry["unavailable"], None
    if t.magnitude_error:
        return "error", f"magnitude does not parse: {t.magnitude_error}", None
    if entry["m"] is None:
        return "error", entry["error"], None
    try:
        judgement = mod.judge(entry["m"], t.magnitude, cond)
    except Exception as exc:
        return "error", _error_reason(exc), None
    return judgement.verdict, judgement.reason, judgement


def implementation_text(entry: dict[str, Any]) -> str:
    """'ssd: bundled ssd_chunked (chunk 64); scan: peer:mamba_ssm ...' for one combination."""
    described = entry.get("described") or {}
    parts = [f"{side}: {described.get(side, name)}" for side, name in entry["combo"].items()]
    return "; ".join(parts) or "bundled"


def merged_entry(entries: list[dict[str, Any]], cond: dict[str, Any]) -> dict[str, Any]:
    """One combination's rounds as one entry: its measurement merged from the rounds that
    measured (`flopkb.verify.rounds`), judged from the same stored, rounded numbers that
    `flopkb validate` re-derives the verdict from. A round that failed is noted; with none
    measured, the first round's failure stands."""
    from flopkb.verify.experiments._common import Measurement
    from flopkb.verify.rounds import merge_rounds

    ok = [e for e in entries if e["m"] is not None]
    first = ok[0] if ok else entries[0]
    merged = {**first, "rounds": [], "checks": [c for e in entries for c in e["checks"]],
              "duration": sum(e["duration"] for e in entries)}
    if not ok:
        return merged
    rounds = [_jsonable({"data": e["m"].data, "sweep": e["m"].sweep}) for e in ok]
    data, sweep = merge_rounds(rounds)
    failed = [f"round {i + 1} of {len(entries)}: {e['error'] or e['unavailable']}"
              for i, e in enumerate(entries) if e["m"] is None]
    merged.update(m=Measurement(data, sweep, dict(cond), first["m"].plot), rounds=rounds,
                  notes=[*first["notes"], *failed])
    return merged


def _run_job(s: Session, ctx, job: Job, on_event: Event) -> list[Result]:
    from flopkb.verify.experiments._common import resolve

    info = catalogue(s.kb_root).get(job.experiment)
    mod = experiment_module(job.experiment, s.kb_root)
    hashes = current_hashes(s.kb_root, job.experiment)
    combos = impls.combinations(info.sides, s.impl)
    cache: dict[str, dict[str, Any]] = {}
    results = []
    for t in job.targets:
        cond, notes = resolve(mod.DEFAULTS, t.row.conditions,
                              getattr(mod, "PASSES", ("forward",)))
        # every combination once per round, rounds one after the other: implementations
        # interleave, so a drift of clocks or temperature reaches all of them alike
        for r in range(s.rounds):
            for i, combo in enumerate(combos):
                key = json.dumps([cond, combo, r], sort_keys=True, default=str)
                if key not in cache:
                    cache[key] = _measure(s, ctx, job, mod, cond, combo, primary=i == 0,
                                          round_index=r)
        judged = []
        for combo in combos:
            entry = merged_entry(
                [cache[json.dumps([cond, combo, r], sort_keys=True, default=str)]
                 for r in range(s.rounds)], cond)
            verdict, reason, judgement = _judge(mod, t, entry, cond)
            judged.append((entry, verdict, reason, judgement))
        entry, verdict, reason, judgement = judged[0]
        m = entry["m"]
        sensitive = implementation_sensitive([v for _, v, _, _ in judged])
        applicable = None
        na = not_applicable(s.kb, s.accelerator, t)
        if na and verdict not in {"error", "not-run"}:
            applicable, verdict, reason = verdict, "not-applicable", na
        if notes or entry["notes"]:
            reason = "; ".join(x for x in (reason, *notes, *entry["notes"]) if x)
        if s.impl == "peer" and not any(len(side.impls) > 1 for side in info.sides):
            reason = "; ".join(x for x in (reason, "no peer for this experiment: bundled ran")
                               if x)
        judgements = [Judged(combination=e["combo"], implementations=e.get("described") or {},
                             verdict=v, measured=_measured(j), reason=r,
                             rounds=e["rounds"] if k else [])
                      for k, (e, v, r, j) in enumerate(judged)] if info.sides else []
        record = _evidence(
            s, claim=t.claim, experiment=job.experiment, implementation=implementation_text(entry),
            hashes=hashes,
            cond={**cond, **({"not_honoured": notes} if notes else {}), "quick": s.quick,
                  **s.run_conditions},
            stats={"timings": entry["timings"], "data": m.data if m else {},
                   "plot": m.plot if m else None,
                   **({"other_combinations": {impls.label(e["combo"]): e["timings"]
                                              for e, *_ in judged[1:]}}
                      if len(judged) > 1 else {})},
            measured=_measured(judgement), expected=t.magnitude.as_dict() if t.magnitude else
            {"text": t.row.magnitude, "error": t.magnitude_error},
            verdict=verdict, applicable=applicable, reason=reason,
            criterion=judgement.criterion if judgement else info.criterion,
            checks=[c for e, *_ in judged for c in e["checks"]],
            ceilings=ctx.ceilings.as_dict() if ctx.ceilings else {},
            sweep=m.sweep if m else [], duration=sum(e["duration"] for e, *_ in judged),
            artifacts=[], judgements=judgements, sensitive=sensitive, rounds=entry["rounds"])
        record = _safe_plot(s, record, m.plot if m else None)
        s.save(record)
        results.append(Result(
            t.claim, job.experiment, verdict,
            record.measured.model_dump(mode="json") if record.measured else None,
            record.expected, record.id if s.write else None, reason, record.conditions,
            record.criterion, duration_s=record.duration_s,
            judgements=[j.model_dump(mode="json") for j in judgements] or None,
            implementation_sensitive=sensitive))
        on_event("result", {"experiment": job.experiment, "claim": t.claim, "verdict": verdict})
    return results


def _safe_plot(s: Session, record: EvidenceRecord, spec: dict[str, Any] | None) -> EvidenceRecord:
    # a picture that fails to draw never costs the evidence
    try:
        return _plot(s, record, spec)
    except Exception as exc:
        failed = {**record.statistics, "plot_error": f"{type(exc).__name__}: {exc}"}
        return record.model_copy(update={"statistics": failed})


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _dist() -> tuple[int, int, int]:
    return (int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")),
            int(os.environ.get("LOCAL_RANK", "0")))


def run_gpu(kb, kb_root: Path | None, jobs: list[Job], *, quick: bool = False,
            impl: str = "bundled", command: str = "flopkb verify --gpu",
            out_dir: Path | None = None, write: bool = True,
            on_event: Event = _noop, device: str | None = None,
            portable: bool = False, memory_budget_gb: float | None = None,
            rounds: int | None = None, sign_key: Path | None = None,
            ) -> tuple[dict[str, Any] | None, list[Result] | None]:
    """Calibrate, run this rank's share of `jobs`, write evidence; rank 0 returns every rank's
    results (other ranks return (machine, None)). Raises NoGpuError without CUDA.

    `portable`: kernels take the paths an Ampere/Ada GPU has (FLOPKB_PORTABLE=1: no TMA, no
    Hopper-only schedules). `memory_budget_gb`: this process may allocate at most that much
    device memory (torch's per-process fraction), as on a smaller part: a sweep point that does
    not fit is skipped with a note, a claim's own point that does not fit is an error.
    `rounds`: independent rounds per claim point (default `flopkb.verify.rounds.ROUNDS`, 1 with
    `quick`). `sign_key`: sign every evidence record written (`flopkb.verify.signing`)."""
    if impl not in impls.MODES:
        raise ValueError(f"expected impl one of {', '.join(impls.MODES)}, got {impl!r}")
    if not gpu_available():
        raise NoGpuError("no CUDA GPU is available to this process")
    import torch

    from flopkb.verify.context import Context, Settings
    from flopkb.verify.machine import fingerprint

    rank, world, local = _dist()
    run_conditions: dict[str, Any] = {}
    if portable:
        from flopkb.kernelpkg import PORTABLE_ENV

        os.environ[PORTABLE_ENV] = "1"
        run_conditions["portable"] = True
    owns_group = False
    if world > 1:
        import torch.distributed as dist

        torch.cuda.set_device(local)
        if not dist.is_initialized():
            dist.init_process_group("nccl")
            owns_group = True
    if memory_budget_gb is not None:
        total = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        fraction = memory_budget_gb * 2**30 / total
        if not 0 < fraction <= 1:
            raise ValueError(f"expected a memory budget in (0, {total / 2**30:.0f}] GiB, got "
                             f"{memory_budget_gb:g}")
        torch.cuda.set_per_process_memory_fraction(fraction)
        run_conditions["memory_budget_gib"] = memory_budget_gb
    machine = fingerprint()
    machine.update(run_conditions)
    acc = match_accelerator(kb, machine.get("gpu"))
    machine["accelerator"] = acc
    machine["rank"], machine["world_size"] = rank, world
    folder = out_dir or ev_io.evidence_dir(kb_root or Path("."))
    from flopkb.verify.rounds import ROUNDS

    s = Session(kb, kb_root, folder, acc, machine, command, quick, impl, write, run_conditions,
                rounds=rounds or (1 if quick else ROUNDS), sign_key=sign_key)
    ctx = Context(gpu=True, quick=quick, kb_root=kb_root, kb=kb,
                  settings=Settings.for_mode(quick), device_name=device)
    l2 = machine.get("l2_cache_bytes")
    if l2:
        ctx.l2_bytes = int(l2)
    mine = shard(jobs, rank, world)
    on_event("start", {"total": 1 + len(mine), "machine": machine})
    s.write = write and rank == 0
    results = [_calibrate(s, ctx, on_event)]
    s.write = write
    on_event("advance", {"experiment": CALIBRATION})
    if rank != 0:
        results = []
    for job in mine:
        on_event("begin", {"experiment": job.experiment})
        results.extend(_run_job(s, ctx, job, on_event))
        _free_memory()
        on_event("advance", {"experiment": job.experiment})
    if world > 1:
        import torch.distributed as dist

        gathered: list[Any] | None = [None] * world if rank == 0 else None
        dist.gather_object([r.as_dict() for r in results], gathered, dst=0)
        if owns_group:
            # release NCCL's resources before exit (torch warns about a leak otherwise)
            dist.destroy_process_group()
        if rank != 0:
            return machine, None
        merged = [Result(**{k: v for k, v in d.items() if k in Result.__dataclass_fields__})
                  for part in gathered or [] for d in part]
        return machine, merged
    return machine, results
