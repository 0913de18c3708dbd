"""The verify runs behind the verdicts: the full `--impl all` run with its machine and ceilings,
the portability run, the repeated default runs, the calibration, the rechecks and the one run
sharded over two GPUs."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from flopkb.kb import load_files

from .fmt import paragraph
from .sources import ACCELERATOR, MissingFigure, Sources, command_of
from .verdicts import CLAIMS


def run_facts(src: Sources, block: str) -> dict[str, str]:
    """The full run's machine, times and ceilings, from its JSON, its log and its calibration."""
    json_path, run = src.json(block, "final")
    ids = {r.get("evidence") for r in run["results"]}
    cals = [e for e in src.evidence if e.claim is None and e.id in ids]
    if not cals:
        raise MissingFigure(f"{json_path}: lists no calibration evidence in records/evidence/")
    cal = cals[0]
    m = cal.machine
    log_path, log = src.text(block, "final_log")
    wall = re.search(r"exit (\d+), ([\d.]+) s wall", log)
    if wall is None or "duration_s" not in run:
        raise MissingFigure(f"{log_path}: no 'exit N, S s wall' line, or {json_path}: no "
                            "duration_s")
    stopped = wall.group(1) == "124"
    data = cal.statistics.get("data", {})
    return {
        "gpu": str(m.get("gpu")), "sms": str(m.get("sm_count")), "driver": str(m.get("driver")),
        "cuda": str(m.get("cuda")), "torch": str(m.get("torch")).split("+")[0],
        "triton": str(m.get("triton")), "date": cal.timestamp.date().isoformat(),
        "l2": f"{int(m.get('l2_cache_bytes', 0)) >> 20}",
        "in_process": f"{float(run['duration_s']):.0f}",
        "wall": (f"the call's {float(wall.group(2)):.0f} s time limit ended the process after it "
                 "had written its results" if stopped else f"{float(wall.group(2)):.0f} s wall"),
        "gemm": f"{cal.conditions.get('gemm_size')}",
        "tflops": f"{data['bf16_tflops']:.0f}", "tflops_p10": f"{data['bf16_tflops_high']:.0f}",
        "copy": f"{data['copy_gbps']:.0f}",
        "log": log_path, "json": json_path, "command": command_of(cal),
    }


def portability(src: Sources, block: str) -> str:
    """The portability run against the full run's default (first) combination, claim by claim."""
    path, run = src.json(block, "portable")
    _, full = src.json(block, "final")
    mine = {r["claim"]: r for r in full["results"]}
    same, differ = 0, []
    for r in run["results"]:
        ref = mine.get(r["claim"])
        first = (ref or {}).get("judgements") or [{}]
        ours = (r.get("judgements") or [{}])[0].get("combination")
        if ref is None or ref["verdict"] != r["verdict"] or first[0].get("combination") != ours:
            differ.append(f"`{r['claim'] or 'calibration'}` {r['verdict']}")
        else:
            same += 1
    mach = run["machine"]
    budget = mach.get("memory_budget_gib")
    verdicts = (f"every verdict ({same} records, calibration included) the same as the default "
                "combination's in the full run" if not differ else
                f"{same} verdicts the same as the full run's default combination, and "
                f"{len(differ)} different: {', '.join(differ)}")
    return (f"The portability run (`flopkb verify --gpu --portable --memory-budget {budget:g}`: "
            f"the kernels' non-Hopper paths, experiments sized to {budget:g} GiB, the default "
            f"implementations) on one {mach.get('gpu')} took {run['duration_s']:.0f} s in-process "
            f"and gave {verdicts} (`{path}`).")


def repeated(src: Sources, block: str) -> str:
    """The default suite run again, each in a process of its own (tools/device/stability_run.sh),
    with the GPU serial each ran on."""
    runs = src.listed_runs(block, "repeated")
    if not runs:
        return ""
    serials = []
    for name in src.names(block, "repeated_gpus"):
        rows = (src.results / name).read_text(encoding="utf-8").splitlines()[1:]
        serials.append(rows[0].split(",")[1].strip() if rows else "?")
    if len(serials) != len(runs):
        raise MissingFigure(f"{block}: {len(runs)} repeated runs but {len(serials)} GPU listings")
    took = ", ".join(f"{r['duration_s']:.0f}" for r in runs)
    files = ", ".join(f"`{r['json']}`" for r in runs)
    return (f"Then `{runs[0]['command']}` (the default suite, bundled kernels, 3 rounds per claim "
            f"point) {len(runs)} times, each in a process of its own "
            f"(`tools/device/stability_run.sh`), on {len(set(serials))} H200 machines (GPU serials "
            f"{', '.join(serials)} in order), {runs[0]['start'].date().isoformat()}: {took} s "
            f"in-process ({files}, each with its `.log` and `.gpu.txt`; the first on a cold "
            "machine). The verdict column pools them with the run above; the measured column is "
            "the newest run's.")


def block_verify_run(src: Sources) -> str:
    f = run_facts(src, "verify-run")
    return paragraph(
        f"`{f['command']}` on one {f['gpu']} ({f['sms']} SMs, {f['l2']} MiB L2, driver "
        f"{f['driver']}, CUDA {f['cuda']}, torch {f['torch']}, triton {f['triton']}), "
        f"{f['date']}, every implementation combination (`tools/device/final_verify.sh`): "
        f"{f['in_process']} s in-process (`{f['json']}`; {f['wall']}; log `{f['log']}`). "
        f"Ceilings measured in the same run: cuBLAS bf16 {f['gemm']}³ {f['tflops']} TFLOP/s "
        f"median ({f['tflops_p10']} at p10), device copy {f['copy']} GB/s. bf16 inputs, fp32 "
        "state, 32K tokens per point unless stated; the `pass` column says whether a claim is "
        "judged on the forward pass or on a training step (forward+backward). Evidence: "
        "`records/evidence/`, one YAML record per claim with one judgement per implementation "
        "combination, and `<evidence id>.png` beside it. " + portability(src, "verify-run")
        + " " + repeated(src, "verify-run"))


def block_calibration(src: Sources) -> str:
    """The newest calibration's ceilings against the accelerator's datasheet figures."""
    cal = src.of(None)
    specs = {"bf16_tensor_flops": 0.0, "hbm_bandwidth": 0.0}
    acc = src.root / "records" / "accelerators" / f"{ACCELERATOR}.yaml"
    kb, _ = load_files([acc])
    for q in specs:
        value = kb.accelerators[ACCELERATOR].specs[q].value
        specs[q] = float(value) if value is not None else float("nan")
    data = cal.statistics["data"]
    flops, copy = data["bf16_tflops_high"], data["copy_gbps_high"]
    return paragraph(
        f"On the H200 (`{cal.id}`): {flops:.0f} TFLOP/s "
        f"({flops / specs['bf16_tensor_flops']:.2f} of {specs['bf16_tensor_flops']:g} dense) and "
        f"{copy:.0f} GB/s ({copy / 1000 / specs['hbm_bandwidth']:.2f} of "
        f"{specs['hbm_bandwidth']:g} TB/s).")


def _claim_of(src: Sources, evidence_id: str) -> str:
    found = [e for e in src.all_evidence if e.id == evidence_id]
    if not found:
        raise MissingFigure(f"recheck of {evidence_id}, which is not in records/evidence/")
    claim = found[0].claim or "calibration"
    label = CLAIMS.get(claim)
    return f"`{claim}`" + (f" ({label})" if label else "")


def _combination(c: dict[str, Any]) -> str:
    return ", ".join(f"{side}={impl}" for side, impl in c["combination"].items())


def block_recheck(src: Sources) -> str:
    """`verify --gpu --recheck` of committed records on another machine: per combination,
    whether the value measured again lies inside the record's interval."""
    path, data = src.json("recheck", "rechecks")
    parts = []
    for r in data["rechecks"]:
        combos = []
        for c in r["combinations"]:
            then = c["then"]
            combos.append(f"{_combination(c)}: {c['status']}, {c['verdict_now']} "
                          f"{c['value_now']:.4g} against [{then['low']:.4g}, {then['high']:.4g}]")
        parts.append(f"{_claim_of(src, r['evidence'])} (`{r['evidence']}`, exit {r['exit']}): "
                     + "; ".join(combos))
    return paragraph(
        f"`flopkb verify --gpu --recheck EVIDENCE` on another {data['gpu'].split(',')[0]} "
        f"({data['started'][:10]}, `{path}`), each record measured again and nothing written: "
        + "; ".join(parts) + ". `verdict holds` is a value outside the record's own interval "
        "with the same verdict: one process's band is narrower than the spread between "
        "processes, which is why the pooled figure is the interval to quote.")


def block_torchrun(src: Sources) -> str:
    """The one run sharded over the GPUs of one host (torchrun)."""
    path, data = src.json("torchrun", "run")
    m = data["machine"]
    stamps = sorted(r["evidence"].rsplit("-", 1)[-1] for r in data["results"] if r.get("evidence"))
    date = f"{stamps[0][:4]}-{stamps[0][4:6]}-{stamps[0][6:8]}" if stamps else "?"
    verdicts = Counter(r["verdict"] for r in data["results"])
    counted = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
    return paragraph(
        f"`torchrun --nproc-per-node {m['world_size']} -m flopkb verify --gpu --quick` ran once, "
        f"on {m['world_size']} {m['gpu']} GPUs of one host ({date}, the code of that day, "
        f"`{path}`): {len(data['results'])} results gathered on rank 0 in "
        f"{data['duration_s']:.0f} s in-process: {counted}. Its evidence was not committed "
        "(a `--quick` run, written to another folder); the sharding itself is unit-tested on "
        "the CPU.")
