"""README and docs figures, generated from the files they come from, so they cannot drift.

    python bench/docs_figures.py           # rewrite every marked block in README.md and docs/*.md
    python bench/docs_figures.py --check   # exit 1, with a diff, where a block differs

A block is the text between `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`; NAME is a key of
BLOCKS. Sources: the newest full-run (not --quick) evidence of each claim on the run's accelerator
and its calibration record (records/evidence/), the verify log (bench/results/verify_*_final.log),
the kernel benchmarks (bench/results/ssm_*.json, dense_*.json) and the CPU timings
(bench/results/cpu_times.json). After a new GPU run: copy the new evidence and results in, then
run this script; a figure the sources no longer hold (a sweep point gone) stops it with a
message naming the claim and the point. tests/unit/test_readme.py fails while README or docs
differ from what this script writes.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import math
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flopkb.kb import load_files
from flopkb.model import EvidenceRecord

ROOT = Path(__file__).resolve().parents[1]
ACCELERATOR = "h200-sxm"
# The kernel benchmark results the README quotes (the _run<N> files are earlier runs).
SSM, DENSE = "ssm_h200.json", "dense_h200.json"
DOCUMENTS = ("README.md", "docs/verify.md", "docs/validate.md")
BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.DOTALL
)

# The labels of the starting material (CLAIMS.md), in the order the tables list the claims.
CLAIMS = {
    "selective-ssm-scan/scan-misses-tensor-cores": "A1",
    "mamba2-ssd/ssd-vs-fused-scan": "A2",
    "mamba2-ssd/ssd-attention-crossover": "A3",
    "mamba2-ssd/ssd-vs-attention-16k": "A3",
    "samba/mamba-trains-slower-than-mlp": "A4",
    "gated-linear-attention/shared-decay-tensor-core-friendly": "A5",
    "selective-ssm-scan/flops-predict-time-poorly": "A6",
    "mamba2-ssd/training-matmul-dominated": "B1",
    "mamba2-ssd/quadratic-wins-short": "B3",
    "mamba2-ssd/default-chunk-size": "B4",
    "mamba2-ssd/kernel-vs-pytorch": "B5",
    "dense-gemm/gemm-ruggedness": "C2",
    "low-rank-gemm/lowrank-efficient-consumer": "C3",
    "int8-gemm/int8-native-beats-emulated": "C4",
    "gpu-reduction/determinism-levels": "D1",
    "gpu-reduction/gpu-to-gpu-overhead": "D3",
}


class MissingFigure(LookupError):
    """A figure the text needs is not in its source (the sweep or the results changed)."""


def size(n: float) -> str:
    """Sequence lengths and element counts as the docs write them: 512, 1K, 16K, 16M."""
    n = int(n)
    for suffix, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def g3(x: float) -> str:
    """Three significant figures, trailing zeros kept (12.0, 3.00), never in exponent form."""
    text = f"{x:#.3g}".rstrip(".")
    return f"{x:.0f}" if "e" in text else text


def x1(x: float) -> str:
    """A ratio at another sweep point, as the tables write them: 6.2x, 1.04x near parity."""
    return f"{x:.2f}x" if x < 1.5 else f"{x:.1f}x"


def band(lo: float, hi: float) -> str:
    return f"[{g3(lo)}, {g3(hi)}]"


@dataclass
class Sources:
    """Everything the blocks read, loaded once."""

    root: Path = ROOT

    @cached_property
    def evidence(self) -> list[EvidenceRecord]:
        paths = sorted((self.root / "records" / "evidence").glob("*.yaml"))
        kb, findings = load_files(paths)
        if findings:
            raise SystemExit("\n".join(f"{f.file}: {f.rule} {f.message}" for f in findings))
        return [e for e in kb.evidence.values() if e.accelerator == ACCELERATOR
                and not (e.conditions or {}).get("quick")]

    def of(self, claim: str | None) -> EvidenceRecord:
        """The newest full-run evidence of `claim` (None: the calibration)."""
        found = [e for e in self.evidence if e.claim == claim]
        if not found:
            raise MissingFigure(f"no evidence for {claim or 'the calibration'} on {ACCELERATOR}")
        return max(found, key=lambda e: (e.timestamp, e.id))

    @property
    def results(self) -> Path:
        return self.root / "bench" / "results"

    @cached_property
    def log(self) -> tuple[str, str]:
        paths = sorted(self.results.glob("verify_*_final.log"))
        if not paths:
            raise MissingFigure("no bench/results/verify_*_final.log")
        path = paths[-1]
        return path.relative_to(self.root).as_posix(), path.read_text(encoding="utf-8")

    def json(self, pattern: str) -> tuple[str, dict[str, Any]]:
        paths = sorted(self.results.glob(pattern))
        if not paths:
            raise MissingFigure(f"no bench/results/{pattern}")
        return paths[0].relative_to(self.root).as_posix(), json.loads(paths[0].read_text())


def point(e: EvidenceRecord, **where: Any) -> dict[str, Any]:
    """The one sweep row of `e` matching `where`."""
    rows = [r for r in e.sweep if all(r.get(k) == v for k, v in where.items())]
    if len(rows) != 1:
        raise MissingFigure(f"{e.claim}: {len(rows)} sweep points with {where} (expected one)")
    return rows[0]


def primary(e: EvidenceRecord, *keys: str) -> dict[str, Any]:
    """The sweep row at the evidence's own conditions (the judged point)."""
    return point(e, **{k: e.conditions[k] for k in keys})


def measured(e: EvidenceRecord, unit: str = "x") -> str:
    m = e.measured
    if m is None:
        raise MissingFigure(f"{e.claim}: no measured value")
    if unit == "tokens":
        return f"{m.value:.0f} tokens [{m.low:.0f}, {m.high:.0f}]"
    return f"{g3(m.value)}{unit} {band(m.low, m.high)}"


def others(e: EvidenceRecord, key: str, label: Callable[[Any], str], column: str = "ratio",
           fmt: Callable[[float], str] = x1, exclude: dict[str, Any] | None = None,
           **fixed: Any) -> list[str]:
    """`<value> at <label>` for every sweep row with `fixed` whose `key` is not the judged one."""
    rows = [r for r in e.sweep if all(r.get(k) == v for k, v in fixed.items())
            and r.get(key) != e.conditions.get(key) and r is not exclude]
    return [f"{fmt(r[column])} at {label(r[key])}" for r in sorted(rows, key=lambda r: r[key])]


def verdict_rows(src: Sources) -> list[list[str]]:
    rows = []
    for claim, label in CLAIMS.items():
        e = src.of(claim)
        expected = (e.expected or {}).get("text", "-")
        verdict = e.verdict.value
        what, note = NOTES[claim](e)
        shown = f"**{verdict}**" if verdict == "refuted" else verdict
        rows.append([f"`{claim}` ({label})", expected, shown, what, note])
    return rows


def _a1(e: EvidenceRecord) -> tuple[str, str]:
    c, p = e.conditions, primary(e, "seq_len", "state_dim")
    at = others(e, "state_dim", lambda v: f"N={v}", seq_len=c["seq_len"])
    return (f"same SSD math, scan / chunked {measured(e)}",
            f"H={c['heads']}, P={c['head_dim']}, N={c['state_dim']}, T={size(c['seq_len'])}; "
            f"{', '.join(at)}; scan {p['scan_tflops']:.1f} TFLOP/s vs chunked "
            f"{p['chunked_tflops']:.0f}")


def _a2(e: EvidenceRecord) -> tuple[str, str]:
    c, lo, hi = e.conditions, e.expected["low"], e.expected["high"]
    same_t = [r for r in e.sweep if r["seq_len"] == c["seq_len"] and r is not primary(
        e, "seq_len", "state_dim")]
    inside = [f"{x1(r['ratio'])} at N={r['state_dim']}" for r in same_t if lo <= r["ratio"] <= hi]
    inside += others(e, "seq_len", lambda v: f"T={size(v)}", state_dim=c["state_dim"])
    outside = [f"{x1(r['ratio'])} at N={r['state_dim']}" for r in same_t
               if not lo <= r["ratio"] <= hi]
    tail = f"; outside {e.expected['text']}: {', '.join(outside)}" if outside else ""
    return measured(e), f"N={c['state_dim']}, T={size(c['seq_len'])}; {', '.join(inside)}{tail}"


def _a3_crossover(e: EvidenceRecord) -> tuple[str, str]:
    c, data = e.conditions, e.statistics.get("data", {})
    backend = data.get("attention_backend") or "?"
    return (measured(e, "tokens"),
            f"SSD vs SDPA {backend} (verified it ran), head dim {c['head_dim']}; SSD is already "
            f"faster from ~{round(e.measured.value, -1):.0f} tokens")


def _a3_ratio(e: EvidenceRecord) -> tuple[str, str]:
    claimed, at = e.expected["low"], e.expected["condition"]["at"]
    rows = sorted(e.sweep, key=lambda r: r["seq_len"])
    shorter = [r for r in rows if 2048 <= r["seq_len"] < at]
    between = next((f"{claimed:g}x lies between {size(a['seq_len'])} and "
                    f"{size(b['seq_len'])} on this part" for a, b in itertools.pairwise(rows)
                    if a["ratio"] <= claimed <= b["ratio"]), "")
    at_text = ", ".join(f"{x1(r['ratio'])} at {size(r['seq_len'])}" for r in shorter)
    return measured(e), f"{at_text}: {between}" if between else at_text


def _a4(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    at = others(e, "state_dim", lambda v: f"N={v}")
    return (f"Mamba-1 layer / MLP {measured(e)}",
            f"d={c['d_model']}, N={c['state_dim']}, forward; {', '.join(at)}")


def _a5(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    at = others(e, "state_dim", lambda v: f"N={v}", seq_len=c["seq_len"])
    at += others(e, "seq_len", lambda v: f"T={size(v)}", state_dim=c["state_dim"])
    return (f"per-channel / per-head decay {measured(e)}",
            f"N={c['state_dim']}, T={size(c['seq_len'])}, chunk {c['chunk_size']}; "
            f"{', '.join(at)}")


def _a6(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    p = next(r for r in e.sweep if math.isclose(r["misprediction"], e.measured.value,
                                                 rel_tol=1e-4))
    fractions = e.statistics.get("data", {}).get("roofline_fraction", {})
    same_n = [r for r in e.sweep if r["state_dim"] == c["state_dim"]]
    at = others(e, "seq_len", lambda v: f"T={size(v)}", column="misprediction",
                fmt=lambda v: f"{v:.0f}x", exclude=p, state_dim=c["state_dim"])
    worst = max(same_n, key=lambda r: r["misprediction"])
    if worst["seq_len"] == max(r["seq_len"] for r in same_n):
        at[-1] += " (worst at the longest sequence)"
    names = {"selective_scan": "scan", "elementwise_axpby": "axpby", "gemm_bf16": "GEMM"}
    roof = ", ".join(f"{names.get(k, k)} {v:.2f}" for k, v in fractions.items())
    return (f"scan takes {e.measured.value:.0f}x its FLOP-count prediction",
            f"d_model={c['d_model']}, N={c['state_dim']}, T={size(p['seq_len'])}; "
            f"{', '.join(at)}; roofline fraction {roof}")


def _b1(e: EvidenceRecord) -> tuple[str, str]:
    c, p = e.conditions, primary(e, "state_dim")
    at = others(e, "state_dim", lambda v: f"N={v}", column="share", fmt=lambda v: f"{v:.2f}")
    return (f"{e.measured.value:.2f} of forward time in matmul stages",
            f"N={c['state_dim']}; {', '.join(at)}; FLOP share {p['flop_share']:.2f}")


def _b3(e: EvidenceRecord) -> tuple[str, str]:
    first = min(e.sweep, key=lambda r: r["seq_len"])
    cross = e.measured.value
    return (f"crossover at {measured(e, 'tokens')}",
            f"quadratic {1 / first['ratio']:.1f}x faster at T={size(first['seq_len'])}, chunked "
            f"faster from ~{round(cross, -2):.0f} tokens")


def _b4(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    best = {}
    for r in e.sweep:
        if r["state_dim"] not in best or r["ms"] < best[r["state_dim"]]["ms"]:
            best[r["state_dim"]] = r
    mine = best[c["state_dim"]]["chunk_size"]
    rest = "; ".join(f"at N={n} the best chunk is {r['chunk_size']}"
                     for n, r in sorted(best.items()) if n != c["state_dim"])
    return (f"t(Q={c['chunk_size']}) / t(best, Q={mine}) {e.measured.value:.2f}",
            f"N={c['state_dim']}; {rest}" if rest else f"N={c['state_dim']}")


def _b5(e: EvidenceRecord) -> tuple[str, str]:
    top = max(e.sweep, key=lambda r: r["seq_len"])
    at = [f"{x1(r['ratio'])} at T={r['seq_len']}" for r in e.sweep if r is not top]
    return (f"{e.measured.value:.1f}x over the fastest plain-PyTorch form",
            f"T={size(top['seq_len'])} ({top['best_pytorch']} is PyTorch's best); {', '.join(at)}")


def _c2(e: EvidenceRecord) -> tuple[str, str]:
    data = e.statistics.get("data", {})
    sizes = [r["size"] for r in e.sweep]
    odd = [r for r in e.sweep if r["size"] % 8]
    even = [r for r in e.sweep if not r["size"] % 8]

    def span(rows: list[dict[str, Any]]) -> str:
        values = [r["cublas_tflops"] for r in rows]
        return f"{min(values):.0f}-{max(values):.0f}"

    return (f"cuBLAS max/min TFLOP/s {e.measured.value:.1f}x over {min(sizes)}..{max(sizes)}",
            f"roofline predicts {data.get('roofline_swing', 1.0):.1f}; odd sizes "
            f"({', '.join(str(r['size']) for r in odd)}) run at {span(odd)} TFLOP/s, "
            f"multiples of 8 at {span(even)}")


def _c3(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    half = point(e, rank=c["size"] // 2)
    quarter = round(1 / c["rank_fraction"])
    return (f"dense / rank K/{quarter} pair {measured(e)}",
            f"{c['tokens']}x{c['size']}x{c['size']} on an H200 (not a consumer part); stops at "
            f"rank K/2 ({half['speedup']:.2f}x)")


def _c4(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    rest = [f"{x1(r['ratio'])} {band(r['ratio_low'], r['ratio_high'])} at {r['size']}"
            for r in sorted(e.sweep, key=lambda r: -r["size"]) if r["size"] != c["size"]]
    return (f"emulated / native {measured(e)}",
            f"{c['size']}³, bit-exact results; {', '.join(rest)}; INT4 row not applicable on "
            "Hopper")


def _d1(e: EvidenceRecord) -> tuple[str, str]:
    c, p = e.conditions, primary(e, "elements")
    at = others(e, "elements", size, column="atomic_distinct", fmt=lambda v: f"{v:.0f}")
    return (f"atomic: {p['atomic_distinct']} distinct sums in {p['repeats']} runs; fixed order: "
            f"{p['ordered_distinct']}",
            f"{size(c['elements'])} fp32; {', '.join(at)}")


def _d3(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    largest = max(e.sweep, key=lambda r: r["elements"])
    return (f"fixed order / atomic {measured(e)}",
            f"{size(c['elements'])} fp32, graph-timed; {x1(largest['ratio'])} at "
            f"{size(largest['elements'])}: no measurable overhead for a two-pass fixed-order sum "
            "(not CCCL's algorithm)")


NOTES: dict[str, Callable[[EvidenceRecord], tuple[str, str]]] = {
    "selective-ssm-scan/scan-misses-tensor-cores": _a1,
    "mamba2-ssd/ssd-vs-fused-scan": _a2,
    "mamba2-ssd/ssd-attention-crossover": _a3_crossover,
    "mamba2-ssd/ssd-vs-attention-16k": _a3_ratio,
    "samba/mamba-trains-slower-than-mlp": _a4,
    "gated-linear-attention/shared-decay-tensor-core-friendly": _a5,
    "selective-ssm-scan/flops-predict-time-poorly": _a6,
    "mamba2-ssd/training-matmul-dominated": _b1,
    "mamba2-ssd/quadratic-wins-short": _b3,
    "mamba2-ssd/default-chunk-size": _b4,
    "mamba2-ssd/kernel-vs-pytorch": _b5,
    "dense-gemm/gemm-ruggedness": _c2,
    "low-rank-gemm/lowrank-efficient-consumer": _c3,
    "int8-gemm/int8-native-beats-emulated": _c4,
    "gpu-reduction/determinism-levels": _d1,
    "gpu-reduction/gpu-to-gpu-overhead": _d3,
}


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def block_verdicts(src: Sources) -> str:
    return table(["claim (CLAIMS.md)", "magnitude", "verdict", "measured [p10/p90 band]",
                  "conditions; where it holds and where it stops"], verdict_rows(src))


def _run_facts(src: Sources) -> dict[str, str]:
    cal = src.of(None)
    m = cal.machine
    log_path, log = src.log
    seconds = re.search(r"results \(.*\) in ([\d.]+) s", log)
    wall = re.search(r"verify_wall_s=([\d.]+)", log)
    if seconds is None or wall is None:
        raise MissingFigure(f"{log_path}: no 'results (...) in N s' or 'verify_wall_s=' line")
    data = cal.statistics.get("data", {})
    return {
        "gpu": str(m.get("gpu")), "sms": str(m.get("sm_count")), "driver": str(m.get("driver")),
        "cuda": str(m.get("cuda")), "torch": str(m.get("torch")).split("+")[0],
        "triton": str(m.get("triton")), "date": cal.timestamp.date().isoformat(),
        "l2": f"{int(m.get('l2_cache_bytes', 0)) >> 20}",
        "in_process": f"{float(seconds.group(1)):.0f}", "wall": f"{float(wall.group(1)):.0f}",
        "gemm": f"{cal.conditions.get('gemm_size')}",
        "tflops": f"{data['bf16_tflops']:.0f}", "tflops_p10": f"{data['bf16_tflops_high']:.0f}",
        "copy": f"{data['copy_gbps']:.0f}", "copy_p10": f"{data['copy_gbps_high']:.0f}",
        "log": log_path, "claims": str(len(CLAIMS)), "calibration": cal.id,
    }


def paragraph(text: str) -> str:
    return textwrap.fill(text.replace("\n", " "), width=100, break_on_hyphens=False) + "\n"


def block_verify_run(src: Sources) -> str:
    f = _run_facts(src)
    return paragraph(
        f"`flopkb verify --gpu` on one {f['gpu']} ({f['sms']} SMs, driver {f['driver']}, CUDA "
        f"{f['cuda']}, torch {f['torch']},\ntriton {f['triton']}), {f['date']}, bundled kernels, "
        f"{f['in_process']} s in-process ({f['wall']} s wall, cold Triton cache). Ceilings "
        f"measured in the same run:\ncuBLAS bf16 {f['gemm']}³ {f['tflops']} TFLOP/s median "
        f"({f['tflops_p10']} at p10), device copy {f['copy']} GB/s. All forward pass, bf16\n"
        f"inputs, fp32 state, 32K tokens per point unless stated. Evidence: `records/evidence/`, "
        f"one YAML\nrecord per claim (runs since per-claim pictures also write "
        f"`<evidence id>.png` beside it); log:\n`{f['log']}`.\n"
    )


def block_verify_run_docs(src: Sources) -> str:
    f = _run_facts(src)
    return paragraph(
        f"{f['gpu']} ({f['sms']} SMs, {f['l2']} MiB L2, driver {f['driver']}, CUDA {f['cuda']}, "
        f"torch {f['torch']}, triton {f['triton']}), {f['in_process']} s\nin-process, "
        f"{f['wall']} s wall (`{f['log']}`); ceilings measured in the same run:\n"
        f"{f['tflops']} TFLOP/s bf16 median ({f['tflops_p10']} at p10), {f['copy']} GB/s copy. "
        "All forward pass, bf16 inputs, fp32 state.\n"
    )


def block_calibration(src: Sources) -> str:
    f = _run_facts(src)
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
        f"On the H200 (`{f['calibration']}`): {flops:.0f} TFLOP/s\n"
        f"({flops / specs['bf16_tensor_flops']:.2f} of {specs['bf16_tensor_flops']:g} dense) and "
        f"{copy:.0f} GB/s ({copy / 1000 / specs['hbm_bandwidth']:.2f} of "
        f"{specs['hbm_bandwidth']:g} TB/s).\n"
    )


def _ssm_rows(src: Sources) -> tuple[str, list[dict[str, Any]]]:
    path, data = src.json(SSM)
    return path, [r for r in data["rows"] if r.get("ms") is not None and r.get("correct", True)]


def _pick(rows: list[dict[str, Any]], name: str | None = None, prefix: str | None = None,
          **shape: Any) -> dict[str, Any]:
    """The (fastest, for a prefix) correct row of that name and shape."""
    found = [r for r in rows if all(r["shape"].get(k) == v for k, v in shape.items())
             and (r["name"] == name if name else r["name"].startswith(prefix or ""))]
    if not found:
        raise MissingFigure(f"no kernel row {name or prefix + '*'} with {shape}")
    return min(found, key=lambda r: r["ms"])


def _slash(values: list[float], fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values)


def _target(ratios: list[float], limit: float, op: str) -> str:
    ok = all(r <= limit for r in ratios) if op == "<=" else all(r >= limit for r in ratios)
    return "met" if ok else "missed"


def block_kernels(src: Sources) -> str:
    ssm_path, ssm = _ssm_rows(src)
    dense_path, dense = src.json(DENSE)
    lengths = sorted({r["shape"]["T"] for r in ssm if r["op"] == "ssd"})
    shape = next(r["shape"] for r in ssm if r["op"] == "ssd")
    chunked = [_pick(ssm, "ssd_chunked_chunk_size256", T=t) for t in lengths]
    mamba = [_pick(ssm, "peer_mamba_chunk_scan_combined_chunk256", T=t) for t in lengths]
    fla = [_pick(ssm, "peer_fla_chunk_simple_gla", T=t) for t in lengths]
    scan = [_pick(ssm, prefix="ssd_scan_", T=t) for t in lengths]
    n_scan = len({r["name"] for r in ssm if r["name"].startswith("ssd_scan_")})
    fla_rec = [_pick(ssm, "peer_fla_fused_recurrent_simple_gla", T=t) for t in lengths]
    states = sorted({r["shape"]["N"] for r in ssm if r["op"] == "selective_scan"})
    ss = [_pick(ssm, prefix="ss_sequential_", N=n) for n in states]
    ss_peer = [_pick(ssm, "mamba_cuda_selective_scan (external)", N=n) for n in states]
    ss_shape = ss[0]["shape"]

    def ratio(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[float]:
        return [x["ms"] / y["ms"] for x, y in zip(a, b, strict=True)]

    def res(section: str, variant: str, **where: Any) -> dict[str, Any]:
        for r in dense["results"]:
            if r["section"] == section and r["variant"] == variant and all(
                    r["shape"].get(k) == v for k, v in where.items()):
                return r
        raise MissingFigure(f"{dense_path}: no {section}/{variant} {where}")

    gemm_sizes = sorted({r["shape"]["M"] for r in dense["results"] if r["section"] == "gemm"})
    tri = [res("gemm", "triton_bf16_tma_persistent", M=n) for n in gemm_sizes]
    cub = [res("gemm", "cublas_bf16", M=n) for n in gemm_sizes]
    i8, i8_peer = res("int8", "triton_int8"), res("int8", "torch_int_mm")
    red, atomic, tsum = (res("reduction", "ordered_sum"), res("reduction", "atomic_sum"),
                         res("reduction", "torch_sum"))
    axpby, add = res("elementwise", "triton_axpby"), res("elementwise", "torch_add_alpha")
    r_mamba, r_fla, r_scan = ratio(chunked, mamba), ratio(chunked, fla), ratio(scan, fla_rec)
    r_ss = ratio(ss, ss_peer)
    speed = [t["speed_vs_peer"] for t in tri]
    t_list = " / ".join(size(t) for t in lengths)
    rows = [
        ["SSD chunked (chunk 256)",
         f"B·T={size(shape['B'] * shape['T'])}, H={shape['H']}, P={shape['P']}, N={shape['N']}, "
         f"T={t_list}", f"{_slash([r['ms'] for r in chunked], '.3f')} ms",
         f"mamba_ssm `mamba_chunk_scan_combined` {_slash([r['ms'] for r in mamba], '.3f')}",
         f"{_slash(r_mamba, '.2f')}x", f"≤ 1.0x: {_target(r_mamba, 1.0, '<=')}"],
        ["", "", "", f"fla `chunk_simple_gla` {_slash([r['ms'] for r in fla], '.3f')}",
         f"{_slash(r_fla, '.2f')}x", f"≤ 1.2x: {_target(r_fla, 1.2, '<=')}; moonshot (beat both) "
         f"{_target(r_fla + r_mamba, 0.999, '<=')}"],
        ["SSD scan schedule", "same",
         f"{_slash([r['ms'] for r in scan], '.2f')} ms (best of {n_scan} `block_p` settings per "
         "length)",
         f"fla `fused_recurrent_simple_gla` {_slash([r['ms'] for r in fla_rec], '.2f')}",
         f"{_slash(r_scan, '.2f')}x", f"≤ 1.0x: {_target(r_scan, 1.0, '<=')}"],
        ["selective scan (Mamba-1)",
         f"B={ss_shape['B']}, T={ss_shape['T']}, D={ss_shape['D']}, "
         f"N={' / '.join(map(str, states))}",
         f"{_slash([r['ms'] for r in ss], '.2f')} ms",
         f"Mamba CUDA kernel, {_slash([r['ms'] for r in ss_peer], 'g')} ms quoted by issue 4 "
         "(cannot be built on the device image)",
         f"{_slash(r_ss, '.2f')}x", "tied, not beaten" if max(r_ss) >= 0.995 else "beaten"],
        ["Triton bf16 GEMM (TMA, persistent)", " / ".join(f"{n}²" for n in gemm_sizes),
         f"{_slash([r['tflops'] for r in tri], '.0f')} TFLOP/s",
         f"cuBLAS {_slash([r['tflops'] for r in cub], '.0f')}", f"{_slash(speed, '.2f')}x",
         f"≥ 0.85x: {_target(speed, 0.85, '>=')}"],
        ["INT8 GEMM (Triton `tl.dot`)", f"{i8['shape']['M']}³", f"{i8['tflops']:.0f} TOPS",
         f"`torch._int_mm` {i8_peer['tflops']:.0f}", f"{i8['speed_vs_peer']:.2f}x", "-"],
        ["fixed-order reduction", f"{size(red['shape']['n'])} fp32", f"{red['gbs']:.0f} GB/s",
         f"atomic {atomic['gbs']:.0f}, `torch.sum` {tsum['gbs']:.0f}",
         f"{red['time_ratio_vs_atomic']:.2f}x of atomic",
         f"≤ 2x: {_target([red['time_ratio_vs_atomic']], 2.0, '<=')}"],
        ["axpby (elementwise yardstick)", f"{size(axpby['shape']['n'])} fp32",
         f"{axpby['gbs']:.0f} GB/s", f"`torch.add(alpha=)` {add['gbs']:.0f}",
         f"{axpby['roofline_fraction']:.2f} of the copy ceiling", "-"],
    ]
    head = ["kernel", "shape", "bundled", "peer, same run", "ratio", "target"]
    return table(head, rows) + f"\nSources: `{ssm_path}`, `{dense_path}`.\n"


def block_cpu_times(src: Sources) -> str:
    path, t = src.json("cpu_times.json")
    load = t["load_average_before"][0]
    busy = load > t["machine"]["cpus"]
    shared = f", shared with other jobs (load average {load:.1f})" if busy else ""
    return paragraph(
        f"On the CPU the suite takes about {t['suite_s'] / 60:.0f} minutes on "
        f"{t['machine']['cpus']} cores{shared}: {t['suite_cpu_s'] / 60:.1f} CPU-minutes, "
        f"{t['suite_passed']} passed ({t['date']}, `bench/cpu_times.py`, `{path}`)."
    )


def block_plan_time(src: Sources) -> str:
    path, t = src.json("cpu_times.json")
    load = t["load_average_before"][0]
    return paragraph(
        f"The CPU plan mode (`flopkb verify`, Triton interpreter) takes about {t['plan_s']:.0f} s "
        f"on {t['machine']['cpus']} cores at load average {load:.1f} ({t['plan_cpu_s']:.0f} "
        f"CPU-seconds, `{path}`)."
    )


def block_validate_speed(src: Sources) -> str:
    path, v = src.json("validate_scale.json")
    mb = sum(c["bytes"] for c in v["composition"].values()) / 1e6
    return paragraph(
        f"**Speed** (`bench/validate_scale.py`, {v['records']:,} records cloned from the bundled "
        f"KB, {mb:.0f} MB, 2-CPU VM, median of {len(v['runs']['b']['runs_s'])}, one run, "
        f"`{path}`): "
        f"(a) bare libyaml parse `yaml.load(CSafeLoader)` {v['a_libyaml_parse_s']:.1f} s, (b) "
        f"`flopkb validate` **{v['b_flopkb_validate_s']:.1f} s = {v['b_over_a']:.2f}x (a)** "
        f"({v['b_serial_s']:.1f} s with one worker), (c) `check-jsonschema` with the exported "
        f"schema {v['c_check_jsonschema_s']:.0f} s = **{v['c_over_b']:.1f}x (b)**."
    )


def block_graph_speed(src: Sources) -> str:
    path, v = src.json("graph_scale.json")
    return paragraph(
        f"On a {v['records']:,}-record KB, building the graph and answering `affects` takes "
        f"{v['build_plus_affects_s']:.2f} s beyond loading (`bench/graph_scale.py`, `{path}`)."
    )


def block_validate_table(src: Sources) -> str:
    path, v = src.json("validate_scale.json")
    m, cpu, t = v["machine"], v["cpu_s"], v["targets"]
    files = v["composition"]
    mb = sum(c["bytes"] for c in files.values()) / 1e6
    serial_over_a = v["b_serial_s"] / v["a_libyaml_parse_s"]
    met = v["b_over_a"] <= t["b_over_a_max"] and v["c_over_b"] >= t["c_over_b_min"]
    head = paragraph(
        f"Figures of the committed run (`{v['command']}`, {v['timestamp'][:10]}, "
        f"{m['cpu_count']}-CPU VM, Python {m['python']}, PyYAML {m['pyyaml']} on libyaml "
        f"{m['libyaml']}, pydantic {m['pydantic']}; median of {len(v['runs']['b']['runs_s'])}, "
        f"wall clock, interpreter start-up included; `{path}`):"
    )
    rows = [
        ["(a)", "libyaml parse, `yaml.load(CSafeLoader)` (floor)",
         f"{v['a_libyaml_parse_s']:.1f} s", f"{cpu['a']:.1f} s"],
        ["(b)", f"`flopkb validate` ({m['cpu_count']} workers)",
         f"**{v['b_flopkb_validate_s']:.1f} s = {v['b_over_a']:.2f} x (a)**", f"{cpu['b']:.1f} s"],
        ["(b)", "`flopkb validate`, `FLOPKB_WORKERS=1`",
         f"{v['b_serial_s']:.1f} s = {serial_over_a:.2f} x (a)", f"{cpu['b_serial']:.1f} s"],
        ["(c)", "`check-jsonschema --schemafile schema/record.schema.json` (peer)",
         f"{v['c_check_jsonschema_s']:.0f} s = **{v['c_over_b']:.1f} x (b)**", ""],
    ]
    kinds = ", ".join(f"{c['files']:,} {k}" for k, c in sorted(files.items()))
    tail = paragraph(
        f"Targets: (b) <= {t['b_over_a_max']:g} x (a) and (c) >= {t['c_over_b_min']:g} x (b): "
        f"{'both met' if met else 'not both met'}. The KB holds {v['records']:,} files, "
        f"{mb:.0f} MB: {kinds} (clones of the bundled KB of that day); it validates with "
        f"{v['validate_result']['errors']} errors and {v['validate_result']['warnings']} "
        "warnings (graph rules)."
    )
    return head + "\n" + table(["", "what", "wall", "CPU"], rows) + "\n" + tail


def block_kernel_notes(src: Sources) -> str:
    _, ssm = _ssm_rows(src)
    _, data = src.json(SSM)
    _, dense = src.json(DENSE)
    t0 = min(r["shape"]["T"] for r in ssm if r["op"] == "ssd")
    chunked = _pick(ssm, "ssd_chunked_chunk_size256", T=t0)
    stages = next(r["stages"] for r in data["rows"]
                  if r["name"] == "ssd_chunked_stages" and r["shape"]["T"] == t0)
    n0 = min(r["shape"]["N"] for r in ssm if r["op"] == "selective_scan")
    scan = _pick(ssm, prefix="ss_sequential_", N=n0)
    attention = [r["roofline_fraction"] for r in dense["results"] if r["section"] == "attention"]
    chunk_scan = stages["chunk_scan"]["median_ms"]
    return paragraph(
        f"SSD chunked reaches {chunked['frac_roofline']:.2f} of its roofline "
        f"({chunked['tflops']:.0f} TFLOP/s; `chunk_scan` is {chunk_scan:.2f} "
        f"of its {chunked['ms']:.2f} ms, T={size(t0)}), the selective scan about "
        f"{scan['frac_roofline']:.2f} of its byte floor (N={n0}; a sequential chain, like Mamba's "
        f"own kernel), attention (SDPA flash) {min(attention):.2f}-{max(attention):.2f} of the "
        "cuBLAS peak. Details: the READMEs in `kernels/*/`."
    )


BLOCKS: dict[str, Callable[[Sources], str]] = {
    "kernel-notes": block_kernel_notes,
    "validate-table": block_validate_table,
    "graph-speed": block_graph_speed,
    "validate-speed": block_validate_speed,
    "verdicts": block_verdicts,
    "verify-run": block_verify_run,
    "verify-run-docs": block_verify_run_docs,
    "calibration": block_calibration,
    "kernels": block_kernels,
    "cpu-times": block_cpu_times,
    "plan-time": block_plan_time,
}


def regenerate(text: str, src: Sources) -> str:
    """`text` with every marked block rewritten from the sources."""

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in BLOCKS:
            raise MissingFigure(f"unknown figures block {name!r}; known: {', '.join(BLOCKS)}")
        return f"{m.group(1)}{BLOCKS[name](src)}{m.group(4)}"

    return BLOCK.sub(fill, text)


def blocks_in(text: str) -> list[str]:
    return [m["name"] for m in BLOCK.finditer(text)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = parser.parse_args()
    src, status = Sources(), 0
    for name in DOCUMENTS:
        path = ROOT / name
        text = path.read_text(encoding="utf-8")
        new = regenerate(text, src)
        if new == text:
            continue
        if args.check:
            status = 1
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), name, f"{name} (generated)"))
        else:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {name}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
