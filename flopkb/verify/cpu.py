"""The CPU check mode (`flopkb verify` without `--gpu`): every experiment's kernels checked
against their references through Triton's interpreter, and the plan described (verdict
`not-run`: nothing is timed, nothing is written)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from flopkb.evidence import hooks
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.measurement import resolve
from flopkb.kernelpkg import refuse_kernels
from flopkb.verify import sandbox
from flopkb.verify.context import Context
from flopkb.verify.plan import CALIBRATION, Event, Job, Result, noop


def _check_in_child(info: ExperimentInfo, kb_root, kb_code: bool):
    """The body a forked child runs: the experiment's CPU check, and its DEFAULTS and PASSES
    (what the plan reads from a KB's hook, which the parent never imports)."""

    def check() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if not kb_code and kb_root is not None:
            refuse_kernels(kb_root)
        ctx = Context(gpu=False, kb_root=kb_root)
        ctx.begin(info.time_limit_s)
        try:
            module = hooks.experiment_module(info, kb_root, kb_code=kb_code)
            module.cpu_check(ctx)
        except Exception as exc:
            # any failure of one experiment's check is recorded; the plan goes on
            ctx.checks.append({"kernel": info.name, "ok": False,
                               "error": f"{type(exc).__name__}: {exc}"})
            return ctx.checks, {}
        return ctx.checks, {"defaults": dict(module.DEFAULTS),
                            "passes": list(getattr(module, "PASSES", ("forward",)))}

    return check


def _limited_check(info: ExperimentInfo, kb_root, kb_code: bool
                   ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(check rows, DEFAULTS/PASSES of the module) of one experiment, its CPU check run in a
    child bounded in time and memory (`sandbox.run_limited`); a check that ran past its limit,
    out of memory or died is one failing row naming the declaration."""
    reply = sandbox.run_limited(_check_in_child(info, kb_root, kb_code), info.time_limit_s)
    if "error" in reply:
        where = info.file or f"experiment {info.name}"
        return [{"kernel": info.name, "ok": False, "error": f"{where}: {reply['error']}"}], {}
    rows = [r for r in reply.get("rows", []) if isinstance(r, dict)]
    return rows, reply.get("extra") or {}


def _preload() -> None:
    """Import torch and Triton (what every check imports) once, here: each forked child
    inherits them instead of starting torch again (seconds per check). Importing starts no
    thread pool, so forking afterwards is safe."""
    import torch  # noqa: F401

    with contextlib.suppress(ImportError):
        import triton  # noqa: F401


def run_cpu(kb, jobs: list[Job], extra: Sequence[ExperimentInfo] = (),
            on_event: Event = noop, *, kb_code: bool = True) -> list[Result]:
    """Check every experiment's kernels against their references on the CPU (Triton interpreter)
    and describe the plan; verdict `not-run`. `extra`: experiments to check with no claim.

    Each check runs in a child process bounded by its declaration's time_limit_s and a memory
    cap. Without `kb_code` an experiment that would run the KB's own code (`hooks.kb_code_in`)
    is not checked: its row says so (`skipped`), and the plan reads no module of the KB's."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    _preload()
    calibration = kb.catalogue().get(CALIBRATION)
    infos = [calibration, *(j.info for j in jobs), *extra]
    protocol: dict[str, dict[str, Any]] = {}
    checked: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    on_event("start", {"total": len(infos)})
    for info in infos:
        why = None if kb_code else hooks.kb_code_in(info, kb.root)
        if why:
            skipped[info.name] = why
            checked[info.name] = []
        else:
            checked[info.name], protocol[info.name] = _limited_check(info, kb.root, kb_code)
        on_event("advance", {"experiment": info.name})

    def reason(name: str, *notes: str) -> str:
        head = (f"not checked: {skipped[name]} (--no-kb-code)" if name in skipped
                else "no GPU: CPU check only")
        return "; ".join([head, *notes])

    results = [Result(None, CALIBRATION, "not-run", reason=reason(CALIBRATION),
                      cpu_check=checked[CALIBRATION])]
    for job in jobs:
        defaults, passes = _protocol(job.info, kb.root, protocol.get(job.experiment))
        for t in job.targets:
            cond, notes = resolve(defaults, t.row.conditions, passes)
            if t.row.verify.judged_on:
                notes.append(f"judged on {', '.join(t.row.verify.judged_on)} only "
                             "(not-applicable elsewhere)")
            results.append(Result(
                t.claim, job.experiment, "not-run",
                expected=t.magnitude.as_dict() if t.magnitude else None,
                reason=reason(job.experiment, *notes),
                conditions=cond, criterion=job.info.criterion, cpu_check=checked[job.experiment]))
    for info in extra:
        results.append(Result(None, info.name, "not-run",
                              reason=reason(info.name, "no claim links this experiment")
                              if info.name in skipped else "no claim links this experiment",
                              cpu_check=checked[info.name]))
    return results


def skipped_experiments(results: Sequence[Result]) -> list[str]:
    """The experiments a `--no-kb-code` plan left unchecked, in plan order."""
    seen: dict[str, None] = {}
    for r in results:
        if r.reason and r.reason.startswith("not checked:"):
            seen.setdefault(r.experiment)
    return list(seen)


def _protocol(info: ExperimentInfo, kb_root, sent: dict[str, Any] | None
              ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """DEFAULTS and PASSES of `info`'s module: flopkb's own (bundled hook or the declaration
    runner) imported here; a KB hook's as its child sent them (empty when it did not run)."""
    if info.runs_kb_code:
        sent = sent or {}
        defaults = sent.get("defaults") if isinstance(sent.get("defaults"), dict) else {}
        passes = sent.get("passes") if isinstance(sent.get("passes"), list) else ["forward"]
        return dict(defaults), tuple(str(p) for p in passes)
    module = hooks.experiment_module(info, kb_root, kb_code=False)
    return dict(module.DEFAULTS), tuple(getattr(module, "PASSES", ("forward",)))
