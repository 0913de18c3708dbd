"""The CPU check mode (`flopkb verify` without `--gpu`): every experiment's kernels checked
against their references through Triton's interpreter, and the plan described (verdict
`not-run`: nothing is timed, nothing is written)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from flopkb.evidence import hooks
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.measurement import resolve
from flopkb.verify.context import Context
from flopkb.verify.plan import CALIBRATION, Event, Job, Result, noop


def run_cpu(kb, jobs: list[Job], extra: Sequence[ExperimentInfo] = (),
            on_event: Event = noop) -> list[Result]:
    """Check every experiment's kernels against their references on the CPU (Triton interpreter)
    and describe the plan; verdict `not-run`. `extra`: experiments to check with no claim."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    calibration = kb.catalogue().get(CALIBRATION)
    infos = [calibration, *(j.info for j in jobs), *extra]
    modules: dict[str, Any] = {}
    checked: dict[str, list[dict[str, Any]]] = {}
    on_event("start", {"total": len(infos)})
    for info in infos:
        ctx = Context(gpu=False, kb_root=kb.root)
        ctx.begin(info.time_limit_s)
        try:
            modules[info.name] = hooks.experiment_module(info, kb.root)
            modules[info.name].cpu_check(ctx)
        except Exception as exc:
            # any failure of one experiment's check is recorded; the plan goes on
            ctx.checks.append({"kernel": info.name, "ok": False,
                               "error": f"{type(exc).__name__}: {exc}"})
        checked[info.name] = ctx.checks
        on_event("advance", {"experiment": info.name})
    results = [Result(None, CALIBRATION, "not-run", reason="no GPU: CPU check only",
                      cpu_check=checked[CALIBRATION])]
    for job in jobs:
        mod = modules.get(job.experiment) or hooks.experiment_module(job.info, kb.root)
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
                conditions=cond, criterion=job.info.criterion, cpu_check=checked[job.experiment]))
    for info in extra:
        results.append(Result(None, info.name, "not-run", reason="no claim links this experiment",
                              cpu_check=checked[info.name]))
    return results
