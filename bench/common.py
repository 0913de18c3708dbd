"""What every benchmark under bench/ shares: its command line, its JSON, its timing helpers.

A benchmark is one script, `python bench/NAME.py [--out PATH] [...]`: it measures, prints a short
table last and writes one JSON file (the figures, the machine, the command) to `--out`.
`parser()` declares the options every benchmark spells the same way, `header()` the keys every
JSON starts with, `write_json()` writes atomically (a run cut short leaves the last complete
file), and `measure_ceilings()` is the cuBLAS and copy ceiling the GPU benchmarks compare
against. Scripts import this as `bench.common` after putting the repository first on sys.path.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
# `parser(out=REQUIRED)`: the script has no default output file.
REQUIRED = object()


def parser(doc: str | None, *, out: Path | object | None = None, rounds: int | None = None,
           reps: int | None = None, repeat: int | None = None, records: int | None = None,
           smoke: bool = False, quick: bool = False) -> argparse.ArgumentParser:
    """An ArgumentParser described by the first line of `doc` with the shared options asked for:
    `--out` (REQUIRED, a default path, or None: no file unless given), `--rounds` (interleaved
    rounds), `--reps` (timed repetitions per round), `--repeat` (runs of a CPU timing whose
    median is kept), `--records` (KB size), `--smoke` (CPU, TRITON_INTERPRET=1, tiny sizes) and
    `--quick` (fewer sizes). Scripts add their own options to what it returns."""
    ap = argparse.ArgumentParser(description=(doc or "").strip().splitlines()[0])
    if out is REQUIRED:
        ap.add_argument("--out", type=Path, required=True, help="JSON file to write")
    else:
        ap.add_argument("--out", type=Path, default=out,
                        help=f"JSON file to write (default: {_shown(out)})")
    if rounds is not None:
        ap.add_argument("--rounds", type=int, default=rounds,
                        help="interleaved rounds: every implementation once per round")
    if reps is not None:
        ap.add_argument("--reps", type=int, default=reps, help="timed repetitions per round")
    if repeat is not None:
        ap.add_argument("--repeat", type=int, default=repeat, help="runs; the median is kept")
    if records is not None:
        ap.add_argument("--records", type=int, default=records, help="records in the test KB")
    if smoke:
        ap.add_argument("--smoke", action="store_true",
                        help="tiny sizes on the CPU through TRITON_INTERPRET=1 (tests the script)")
    if quick:
        ap.add_argument("--quick", action="store_true", help="fewer sizes, for a short run")
    return ap


def _shown(out: object) -> str:
    if out is None:
        return "none: print only"
    path = Path(str(out))
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def comma_list(text: str, cast: Callable[[str], Any] = str, default: Any = ()) -> list[Any]:
    """`--dims 2048,4096` as [2048, 4096]; an empty option gives `default`."""
    values = [cast(v) for v in text.split(",") if v.strip()] if text else []
    return values or list(default)


def unknown(names: list[str], known: Any, what: str) -> str | None:
    """The usage error for names not in `known` (None: all known)."""
    missing = [n for n in names if n not in known]
    return f"unknown {what} {missing}; known: {list(known)}" if missing else None


def device_of(args: argparse.Namespace, script: str) -> str | None:
    """Where a kernel benchmark runs: `--smoke` on the CPU through the Triton interpreter (set
    here, before anything imports triton), else a CUDA GPU; None, after one line on stderr, when
    there is none."""
    if getattr(args, "smoke", False):
        os.environ["TRITON_INTERPRET"] = "1"
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    print(f"bench/{script} needs a CUDA GPU (or --smoke)", file=sys.stderr)
    return None


def header(**extra: Any) -> dict[str, Any]:
    """The keys every result starts with: the command line and the UTC start time."""
    return {"command": " ".join([sys.executable, *sys.argv]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}


def write_json(path: Path, data: dict[str, Any], indent: int = 1) -> None:
    """Write `data` to `path` through a temp file in the same folder, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def sibling(name: str) -> ModuleType:
    """Another bench script as a module (bench/NAME.py), e.g. validate_scale's clone generator."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_s(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of `repeat` calls of `fn`, and its last answer."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    return statistics.median(walls), statistics.median(cpus), out


def device_or_wall_ms(fn: Callable[[], Any], on_gpu: bool, reps: int, budget_ms: float
                      ) -> dict[str, Any]:
    """One call of `fn` timed: on the GPU by the device clock (flopkb.verify.timing, `budget_ms`
    of samples), on the CPU (a smoke run) by wall time over `reps` calls after one warm call."""
    from flopkb.verify.timing import summarize, time_cuda

    if on_gpu:
        return time_cuda(lambda: fn(), [()], warmup=3, reps=reps, budget_ms=budget_ms).as_dict()
    fn()
    samples = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return summarize(samples, method="cpu-wall").as_dict()


def measure_ceilings(quick: bool = True) -> dict[str, Any]:
    """The bf16 cuBLAS matmul rate (8192^3, random data) and the device copy bandwidth (bytes
    read + written, 1 GiB buffers, far past L2), medians of CUDA-event timings: the ceilings a
    GPU benchmark's roofline fractions are taken against."""
    import torch

    from flopkb.verify.timing import time_cuda

    n, reps = 8192, 10 if quick else 30
    mats = [(torch.randn(n, n, device="cuda", dtype=torch.bfloat16),
             torch.randn(n, n, device="cuda", dtype=torch.bfloat16)) for _ in range(2)]
    t_mm = time_cuda(torch.matmul, mats, warmup=3, reps=reps)
    del mats
    numel = 1 << 29
    src = torch.randn(numel, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    t_cp = time_cuda(lambda a, b: b.copy_(a), [(src, dst)], warmup=3, reps=reps)
    del src, dst
    torch.cuda.empty_cache()
    return {
        "bf16_matmul_tflops": 2 * n**3 / (t_mm.median_ms * 1e-3) / 1e12,
        "copy_gbps": 2 * numel * 2 / (t_cp.median_ms * 1e-3) / 1e9,
        "matmul_timing": t_mm.as_dict(),
        "copy_timing": t_cp.as_dict(),
    }


def floor_ms(flops: float, nbytes: float, ceilings: dict[str, Any]) -> float:
    """The roofline floor of one call in ms: max(FLOPs / matmul peak, bytes / copy bandwidth),
    against the ceilings `measure_ceilings` measured."""
    return 1e3 * max(flops / (ceilings["bf16_matmul_tflops"] * 1e12),
                     nbytes / (ceilings["copy_gbps"] * 1e9))
