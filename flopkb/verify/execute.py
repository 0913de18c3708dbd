"""The GPU run (`flopkb verify --gpu`): calibration, then this rank's share of the jobs, each
claim measured in rounds for every implementation combination asked for, judged, and written
as evidence (`flopkb.verify.record`); sharded over torchrun ranks.

torch is imported where the GPU is used, so that importing this module stays cheap.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flopkb.evidence import hooks, impls, store
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.hashing import current_hashes
from flopkb.evidence.measurement import Measurement, resolve
from flopkb.evidence.rederive import implementation_sensitive
from flopkb.evidence.rounds import ROUNDS, merge_rounds
from flopkb.evidence.stats import ceiling_verdict
from flopkb.kernelpkg import PORTABLE_ENV
from flopkb.model import Measured
from flopkb.verify import machine as host
from flopkb.verify.context import Ceilings, Context, Settings
from flopkb.verify.errors import ExperimentError, PeerUnavailable
from flopkb.verify.plan import CALIBRATION, Event, Job, Result, Target, noop, not_applicable, shard
from flopkb.verify.record import (
    Combo,
    Reading,
    calibration_record,
    claim_record,
    jsonable,
    result_of,
)
from flopkb.verify.session import Session


class NoGpuError(RuntimeError):
    """`--gpu` was asked for on a machine without a usable CUDA GPU."""


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def gpu_accelerator(kb) -> str | None:
    """The accelerator record this process's GPU matches (None: none does)."""
    return host.match_accelerator(kb, host.fingerprint().get("gpu"))


def _error_reason(exc: BaseException) -> str:
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return f"out of device memory: {str(exc).splitlines()[0]}"
    if isinstance(exc, ExperimentError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _free_memory() -> None:
    import gc

    import torch

    gc.collect()
    torch.cuda.empty_cache()


def _datasheet_ceilings(s: Session) -> Ceilings | None:
    flops, bw = s.spec("bf16_tensor_flops"), s.spec("hbm_bandwidth")
    if flops is None or bw is None:
        return None
    return Ceilings(flops, bw * 1000, "datasheet (calibration failed)")


def _calibrate(s: Session, ctx: Context, info: ExperimentInfo, on_event: Event) -> Result:
    mod = hooks.experiment_module(info, s.kb_root)
    hashes = current_hashes(s.kb_root, info)
    started = time.monotonic()
    ctx.begin(info.time_limit_s)
    m, verdict, reason, measured = None, "error", None, None
    try:
        m = mod.measure(ctx, dict(mod.DEFAULTS))
        # The ceiling is the best sustained rate (p10 time), not the median: a kernel may
        # legitimately match the peak GEMM's better repetitions.
        ctx.ceilings = Ceilings(m.data["bf16_tflops_high"], m.data["copy_gbps_high"],
                                "measured in this run (calibration, p10 times)")
        # measured ceilings against the datasheet: above it means a broken timer (error)
        verdict, reason = ceiling_verdict(ctx.ceilings.bf16_tflops, ctx.ceilings.copy_gbps,
                                          s.spec("bf16_tensor_flops"), s.spec("hbm_bandwidth"))
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
    record = calibration_record(
        s, info, hashes, conditions=dict(mod.DEFAULTS),
        statistics={"timings": ctx.timings, "data": m.data if m else {}}, measured=measured,
        verdict=verdict, reason=reason, checks=ctx.checks,
        ceilings=ctx.ceilings.as_dict() if ctx.ceilings else {},
        duration=time.monotonic() - started)
    s.save(record)
    on_event("result", {"experiment": CALIBRATION, "verdict": verdict})
    return result_of(s, record)


def _measure(s: Session, ctx: Context, info: ExperimentInfo, mod: Any, cond: dict[str, Any],
             combo: impls.Combination, primary: bool, round_index: int = 0) -> dict[str, Any]:
    """Run `measure` once for one implementation combination in one round. Combinations past the
    first sweep as --quick does (the claim's own points), with full repetitions: the verdict is
    read there."""
    started = time.monotonic()
    # a peer's first calls compile and autotune its kernels (mamba_ssm's take tens of seconds):
    # combinations past the first get twice the limit for that
    ctx.begin(info.time_limit_s * (1 if primary else 2))
    ctx.impls, quick = dict(combo), ctx.quick
    ctx.sides = {side.name: side.impls for side in info.sides}
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


def _judge(mod: Any, t: Target, entry: dict[str, Any], cond: dict[str, Any]) -> Combo:
    """One combination's merged measurement read against the claim's magnitude."""
    if entry["unavailable"]:
        return Combo(entry, "not-run", entry["unavailable"], None)
    if t.magnitude_error:
        return Combo(entry, "error", f"magnitude does not parse: {t.magnitude_error}", None)
    if entry["m"] is None:
        return Combo(entry, "error", entry["error"], None)
    try:
        judgement = mod.judge(entry["m"], t.magnitude, cond)
    except Exception as exc:
        return Combo(entry, "error", _error_reason(exc), None)
    return Combo(entry, judgement.verdict, judgement.reason, judgement)


def merged_entry(entries: list[dict[str, Any]], cond: dict[str, Any],
                 describe: Callable[[dict[str, Any], list[dict[str, Any]]], Any] | None = None
                 ) -> dict[str, Any]:
    """One combination's rounds as one entry: its measurement merged from the rounds that
    measured (`flopkb.evidence.rounds`), judged from the same stored, rounded numbers that
    `flopkb validate` re-derives the verdict from. A round that failed is noted; with none
    measured, the first round's failure stands. `describe(data, sweep)`, a hook's `plot_spec`
    where its picture holds measured figures (not only column names), describes the picture
    again from the merged measurement, so that it shows the figures judged, not round 1's."""
    ok = [e for e in entries if e["m"] is not None]
    first = ok[0] if ok else entries[0]
    merged = {**first, "rounds": [], "checks": [c for e in entries for c in e["checks"]],
              "duration": sum(e["duration"] for e in entries)}
    if not ok:
        return merged
    rounds = [jsonable({"data": e["m"].data, "sweep": e["m"].sweep}) for e in ok]
    data, sweep = merge_rounds(rounds)
    failed = [f"round {i + 1} of {len(entries)}: {e['error'] or e['unavailable']}"
              for i, e in enumerate(entries) if e["m"] is None]
    plot = describe(data, sweep) if describe else first["m"].plot
    merged.update(m=Measurement(data, sweep, dict(cond), plot), rounds=rounds,
                  notes=[*first["notes"], *failed])
    return merged


def _read(s: Session, ctx: Context, job: Job, mod: Any, t: Target,
          cache: dict[str, dict[str, Any]]) -> Reading:
    """One claim measured (every combination once per round) and read."""
    info = job.info
    cond, notes = resolve(mod.DEFAULTS, t.row.conditions, getattr(mod, "PASSES", ("forward",)))
    combos = impls.combinations(info.sides, s.impl)
    if getattr(mod, "TIMES_EVERY_IMPLEMENTATION", False):
        # the hook times every declared implementation itself (per layer, the serving
        # experiments): one measurement, not one per combination
        combos = combos[:1]

    def key(combo: impls.Combination, r: int) -> str:
        return json.dumps([cond, combo, r], sort_keys=True, default=str)

    # every combination once per round, rounds one after the other: implementations
    # interleave, so a drift of clocks or temperature reaches all of them alike
    for r in range(s.rounds):
        for i, combo in enumerate(combos):
            if key(combo, r) not in cache:
                cache[key(combo, r)] = _measure(s, ctx, info, mod, cond, combo, primary=i == 0,
                                                round_index=r)
    describe = getattr(mod, "plot_spec", None)
    judged = [_judge(mod, t, merged_entry([cache[key(combo, r)] for r in range(s.rounds)], cond,
                                          describe), cond) for combo in combos]
    first = judged[0]
    verdict, reason, applicable = first.verdict, first.reason, None
    na = not_applicable(s.kb, s.accelerator, t, info.needs)
    if na and verdict not in {"error", "not-run"}:
        applicable, verdict, reason = verdict, "not-applicable", na
    if notes or first.entry["notes"]:
        reason = "; ".join(x for x in (reason, *notes, *first.entry["notes"]) if x)
    if s.impl == "peer" and not any(len(side.impls) > 1 for side in info.sides):
        reason = "; ".join(x for x in (reason, "no peer for this experiment: bundled ran") if x)
    sensitive = implementation_sensitive([c.verdict for c in judged])
    return Reading(t, cond, notes, judged, verdict, applicable, reason, sensitive)


def _run_job(s: Session, ctx: Context, job: Job, on_event: Event) -> list[Result]:
    mod = hooks.experiment_module(job.info, s.kb_root)
    hashes = current_hashes(s.kb_root, job.info)
    cache: dict[str, dict[str, Any]] = {}
    results = []
    for t in job.targets:
        reading = _read(s, ctx, job, mod, t, cache)
        record = claim_record(s, job.info, hashes, reading,
                              ctx.ceilings.as_dict() if ctx.ceilings else {})
        s.save(record)
        results.append(result_of(s, record, reading))
        on_event("result", {"experiment": job.experiment, "claim": t.claim,
                            "verdict": reading.verdict})
    return results


def _dist() -> tuple[int, int, int]:
    return (int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1")),
            int(os.environ.get("LOCAL_RANK", "0")))


def run_gpu(kb, jobs: list[Job], *, quick: bool = False, impl: str = "bundled",
            command: str = "flopkb verify --gpu", out_dir: Path | None = None,
            write: bool = True, on_event: Event = noop, device: str | None = None,
            portable: bool = False, memory_budget_gb: float | None = None,
            rounds: int | None = None, sign_key: Path | None = None,
            ) -> tuple[dict[str, Any] | None, list[Result] | None]:
    """Calibrate, run this rank's share of `jobs`, write evidence; rank 0 returns every rank's
    results (other ranks return (machine, None)). Raises NoGpuError without CUDA.

    `portable`: kernels take the paths an Ampere/Ada GPU has (FLOPKB_PORTABLE=1: no TMA, no
    Hopper-only schedules). `memory_budget_gb`: this process may allocate at most that much
    device memory (torch's per-process fraction), as on a smaller part: a sweep point that does
    not fit is skipped with a note, a claim's own point that does not fit is an error.
    `rounds`: independent rounds per claim point (default `flopkb.evidence.rounds.ROUNDS`, 1
    with `quick`). `sign_key`: sign every evidence record written (`flopkb.evidence.signing`)."""
    if impl not in impls.MODES:
        raise ValueError(f"expected impl one of {', '.join(impls.MODES)}, got {impl!r}")
    if not gpu_available():
        raise NoGpuError("no CUDA GPU is available to this process")
    import torch

    rank, world, local = _dist()
    run_conditions: dict[str, Any] = {}
    if portable:
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
    # through the module, so that tests stand in for the GPU's fingerprint
    machine = host.fingerprint()
    machine.update(run_conditions)
    acc = host.match_accelerator(kb, machine.get("gpu"))
    machine["accelerator"] = acc
    machine["rank"], machine["world_size"] = rank, world
    folder = out_dir or store.evidence_dir(kb.root or Path("."))
    s = Session(kb, folder, acc, machine, command, quick, impl, write, run_conditions,
                rounds=rounds or (1 if quick else ROUNDS), sign_key=sign_key)
    ctx = Context(gpu=True, quick=quick, kb_root=kb.root, kb=kb, accelerator=acc,
                  settings=Settings.for_mode(quick), device_name=device)
    l2 = machine.get("l2_cache_bytes")
    if l2:
        ctx.l2_bytes = int(l2)
    mine = shard(jobs, rank, world)
    on_event("start", {"total": 1 + len(mine), "machine": machine})
    s.write = write and rank == 0
    results = [_calibrate(s, ctx, kb.catalogue().get(CALIBRATION), on_event)]
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
