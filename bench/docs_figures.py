"""README and docs figures, generated from the files they come from, so they cannot drift.

    python bench/docs_figures.py           # rewrite every marked block in README.md and docs/*.md
    python bench/docs_figures.py --check   # exit 1, with a diff, where a block differs

A block is the text between `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`; NAME is a key of
BLOCKS. Sources: the newest full-run (not --quick) evidence of each claim on the run's accelerator
and its calibration record (records/evidence/), the verify run (bench/results/verify_*_final.log
and .json, verify_*_portable.json), the kernel benchmarks (bench/results/scan_bwd_*.json,
ssd_bwd_*.json, reduction_levels_*.json, dense_*.json) and the CPU timings
(bench/results/cpu_times.json). After a new GPU run: copy the new evidence and results in, then
run this script; a figure the sources no longer hold (a sweep point gone) stops it with a
message naming the claim and the point. tests/unit/test_readme.py fails while README or docs
differ from what this script writes.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import itertools
import json
import math
import re
import statistics
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flopkb.evidence.pooled import Pooled, pooled
from flopkb.kb import load_files, load_kb
from flopkb.model import EvidenceRecord, Measured
from flopkb.verify.experiments.determinism_overhead import READ_AT

ROOT = Path(__file__).resolve().parents[1]
ACCELERATOR = "h200-sxm"
# The kernel benchmark results the README quotes: the selective scan and SSD forward and training
# step beside their peers (bench/kernels_scan_bwd.py, kernels_ssd_bwd.py), CUB's determinism levels
# (bench/reduction_levels.py) and the dense kernels (bench/kernels_dense.py; the _run<N> files are
# earlier runs).
SCAN_BWD, SSD_BWD = "scan_bwd_h200.json", "ssd_bwd_h200.json"
SSD_BWD_T2K = "ssd_bwd_h200_t2k.json"
SSD_FWD_RERUN = "ssd_fwd_h200_n64_rerun.json"
REDUCTION, DENSE = "reduction_levels_h200.json", "dense_h200.json"
DOCUMENTS = ("README.md", "docs/verify.md", "docs/validate.md", "docs/kb.md", "docs/graph.md")
BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.DOTALL
)

# The labels of the starting material (A1-D4), in the order the tables list the claims.
CLAIMS = {
    "selective-ssm-scan/scan-misses-tensor-cores": "A1",
    "mamba2-ssd/ssd-vs-fused-scan": "A2",
    "mamba2-ssd/ssd-attention-crossover": "A3",
    "mamba2-ssd/ssd-vs-attention-16k": "A3",
    "samba/mamba-trains-slower-than-mlp": "A4",
    "gated-linear-attention/shared-decay-tensor-core-friendly": "A5",
    "selective-ssm-scan/flops-predict-time-poorly": "A6",
    "mamba2-ssd/training-matmul-dominated": "B1",
    "mamba2-ssd/head-dim-vram-pressure": "B2",
    "mamba2-ssd/quadratic-wins-short": "B3",
    "mamba2-ssd/default-chunk-size": "B4",
    "mamba2-ssd/kernel-vs-pytorch": "B5",
    "dense-gemm/gemm-ruggedness": "C2",
    "low-rank-gemm/lowrank-efficient-consumer": "C3",
    "int8-gemm/int8-native-beats-emulated": "C4",
    "gpu-reduction/determinism-levels": "D1",
    "gpu-reduction/run-to-run-not-cross-hardware": "D2",
    "gpu-reduction/gpu-to-gpu-overhead": "D3",
    "gpu-reduction/gpu-to-gpu-overhead-figure": "D3",
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

    @cached_property
    def verify_runs(self) -> list[dict[str, Any]]:
        """Each committed verify run: its JSON (bench/results/verify_h200_*.json, the process's
        output, listing the evidence it wrote), start, duration and evidence ids, oldest first.
        Evidence no such file lists forms one run per (date, command)."""
        runs, listed = [], set()
        for path in sorted(self.results.glob("verify_h200_*.json")):
            data = json.loads(path.read_text())
            ids = {r["evidence"] for r in data.get("results", []) if r.get("evidence")}
            if not ids or "portable" in path.name:
                continue
            listed |= ids
            mine = [e for e in self.evidence if e.id in ids]
            if mine:
                runs.append({"json": path.relative_to(self.root).as_posix(), "ids": ids,
                             "start": min(e.timestamp for e in mine),
                             "duration_s": data.get("duration_s"), "command": _command(mine[0])})
        rest: dict[tuple[str, str], set[str]] = {}
        for e in self.evidence:
            if e.id not in listed:
                rest.setdefault((e.timestamp.date().isoformat(), e.command), set()).add(e.id)
        for ids in rest.values():
            mine = [e for e in self.evidence if e.id in ids]
            runs.append({"json": None, "ids": ids, "start": min(e.timestamp for e in mine),
                         "duration_s": None, "command": _command(mine[0])})
        return sorted(runs, key=lambda r: r["start"])

    @cached_property
    def kb(self) -> Any:
        kb, _ = load_kb(self.root)
        return kb

    @cached_property
    def pooled(self) -> dict[str, Pooled]:
        """claim -> its pooled verdict on the accelerator (flopkb.evidence.pooled, every trusted
        fresh run), as `flopkb claims` shows it."""
        return {c: p for (c, acc), p in pooled(self.kb).items() if acc == ACCELERATOR}

    def runs(self, claim: str) -> list[EvidenceRecord]:
        """Every full-run evidence record of `claim` on the accelerator, oldest first."""
        return sorted((e for e in self.evidence if e.claim == claim),
                      key=lambda e: (e.timestamp, e.id))

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


def judged(e: EvidenceRecord) -> list[dict[str, Any]]:
    """The sweep rows of the judged pass: a row with its own `pass` (A2's training row beside a
    forward verdict) is read only where a block asks for it by name."""
    return [r for r in e.sweep if "pass" not in r]


def point(e: EvidenceRecord, **where: Any) -> dict[str, Any]:
    """The one sweep row of `e` matching `where` (rows with their own `pass` only when `where`
    names one)."""
    rows = [r for r in (e.sweep if "pass" in where else judged(e))
            if all(r.get(k) == v for k, v in where.items())]
    if len(rows) != 1:
        raise MissingFigure(f"{e.claim}: {len(rows)} sweep points with {where} (expected one)")
    return rows[0]


def primary(e: EvidenceRecord, *keys: str) -> dict[str, Any]:
    """The sweep row at the evidence's own conditions (the judged point)."""
    return point(e, **{k: e.conditions[k] for k in keys})


def _row_of_measured(e: EvidenceRecord, column: str,
                     rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The sweep row whose `column` is the measured value (where the verdict was read)."""
    value = e.measured.value if e.measured else None
    for r in judged(e) if rows is None else rows:
        if value is not None and math.isclose(r[column], value, rel_tol=1e-4):
            return r
    raise MissingFigure(f"{e.claim}: no sweep point with {column} = the measured {value}")


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
    rows = [r for r in judged(e) if all(r.get(k) == v for k, v in fixed.items())
            and r.get(key) != e.conditions.get(key) and r is not exclude]
    return [f"{fmt(r[column])} at {label(r[key])}" for r in sorted(rows, key=lambda r: r[key])]


def value_text(m: Measured | None) -> str:
    """A judgement's measured value in the unit it carries: 4.89x, 1803 tokens, 48.6%."""
    if m is None or m.value is None:
        return ""
    v, unit = float(m.value), m.unit
    if unit == "x":
        return f"{g3(v)}x"
    if unit == "%":
        return f"{g3(v)}%"
    if unit == "tokens":
        return f"{v:.0f} tokens"
    if unit == "distinct results":
        return f"{v:.0f} distinct"
    return f"{v:.2f}" if unit == "fraction" else f"{g3(v)} {unit}"


def other_judgements(e: EvidenceRecord) -> str:
    """Every judgement after the first (the one `verdict` reports), named by the sides it swaps:
    `ssd=mamba_ssm: confirmed 4.89x; ssd=fla: ...`."""
    if len(e.judgements) < 2:
        return "-"
    first = e.judgements[0].combination
    parts = []
    for j in e.judgements[1:]:
        swapped = ", ".join(f"{side}={impl}" for side, impl in j.combination.items()
                            if first.get(side) != impl)
        parts.append(f"{swapped}: {j.verdict.value} {value_text(j.measured)}".rstrip())
    return "; ".join(parts)


def widest(src: Sources, claim: str) -> EvidenceRecord | None:
    """The newest run of `claim` that judged several implementations (None: none did)."""
    found = [e for e in src.runs(claim) if len(e.judgements) > 1]
    return found[-1] if found else None


def verdict_rows(src: Sources) -> list[list[str]]:
    rows = []
    for claim, label in CLAIMS.items():
        e = src.of(claim)
        expected = (e.expected or {}).get("text", "-")
        p = src.pooled.get(claim)
        verdict = p.text() if p else e.verdict.value
        what, note = NOTES[claim](e)
        shown = f"**{verdict}**" if verdict.startswith(("refuted", "disagreeing")) else verdict
        if p is not None and p.implementation_sensitive:
            shown += ", **implementation-sensitive**"
        if p is not None and p.figure is not None:
            shown += f"; pooled {p.figure.text()}"
        wide = widest(src, claim)
        others_cell = (f"{other_judgements(wide)} ({wide.timestamp.date().isoformat()} run)"
                       if wide is not None else "-")
        rows.append([f"`{claim}` ({label})", expected, e.conditions.get("pass", "-"), shown, what,
                     note, others_cell])
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
    same_t = [r for r in judged(e) if r["seq_len"] == c["seq_len"] and r is not primary(
        e, "seq_len", "state_dim")]
    inside = [f"{x1(r['ratio'])} at N={r['state_dim']}" for r in same_t if lo <= r["ratio"] <= hi]
    inside += others(e, "seq_len", lambda v: f"T={size(v)}", state_dim=c["state_dim"])
    outside = [f"{x1(r['ratio'])} at N={r['state_dim']}" for r in same_t
               if not lo <= r["ratio"] <= hi]
    tail = f"; outside {e.expected['text']}: {', '.join(outside)}" if outside else ""
    trains = [r for r in e.sweep if r.get("pass") and r.get("pass") != c.get("pass")
              and r["seq_len"] == c["seq_len"] and r["state_dim"] == c["state_dim"]]
    train = "".join(f"; {r['pass']} {x1(r['ratio'])} {band(r['ratio_low'], r['ratio_high'])}"
                    for r in trains)
    return (measured(e),
            f"N={c['state_dim']}, T={size(c['seq_len'])}; {', '.join(inside)}{tail}{train}")


def _training_crossover(e: EvidenceRecord) -> str:
    cross = e.statistics.get("data", {}).get("train_crossover") or {}
    if cross.get("value") is not None:
        return f"; forward+backward crossover {cross['value']:.0f} tokens"
    if cross.get("high") is not None:
        return (f"; forward+backward: SSD faster already at {size(cross['high'])} "
                "(crossover below the sweep)")
    return ""


def _a3_crossover(e: EvidenceRecord) -> tuple[str, str]:
    c, data = e.conditions, e.statistics.get("data", {})
    backend = data.get("attention_backend") or "?"
    return (measured(e, "tokens"),
            f"SSD vs SDPA {backend} (verified it ran), head dim {c['head_dim']}; SSD is already "
            f"faster from ~{round(e.measured.value, -1):.0f} tokens{_training_crossover(e)}")


def _a3_ratio(e: EvidenceRecord) -> tuple[str, str]:
    claimed, at = e.expected["low"], e.expected["condition"]["at"]
    rows = sorted(judged(e), key=lambda r: r["seq_len"])
    shorter = [r for r in rows if 2048 <= r["seq_len"] < at]
    between = next((f"{claimed:g}x lies between {size(a['seq_len'])} and "
                    f"{size(b['seq_len'])} on this part" for a, b in itertools.pairwise(rows)
                    if a["ratio"] <= claimed <= b["ratio"]), "")
    at_text = ", ".join(f"{x1(r['ratio'])} at {size(r['seq_len'])}" for r in shorter)
    text = f"{at_text}: {between}" if between else at_text
    top = point(e, seq_len=at)
    if "train_ratio" in top:
        text += (f"; forward+backward {x1(top['train_ratio'])} "
                 f"{band(top['train_ratio_low'], top['train_ratio_high'])} at {size(at)}")
    return measured(e), text


def _a4(e: EvidenceRecord) -> tuple[str, str]:
    c, p = e.conditions, primary(e, "state_dim")
    at = [f"{x1(r['ratio'])} at N={r['state_dim']} (forward {x1(r['forward_ratio'])})"
          for r in judged(e) if r is not p]
    return (f"Mamba-1 layer / MLP {measured(e)}",
            f"d={c['d_model']}, N={c['state_dim']}; forward only {x1(p['forward_ratio'])} "
            f"{band(p['forward_ratio_low'], p['forward_ratio_high'])}; {', '.join(at)}")


def _a5(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    at = others(e, "state_dim", lambda v: f"N={v}", seq_len=c["seq_len"])
    at += others(e, "seq_len", lambda v: f"T={size(v)}", state_dim=c["state_dim"])
    return (f"per-channel / per-head decay {measured(e)}",
            f"N={c['state_dim']}, T={size(c['seq_len'])}, chunk {c['chunk_size']}; "
            f"{', '.join(at)}")


def _a6(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    p = _row_of_measured(e, "misprediction")
    fractions = e.statistics.get("data", {}).get("roofline_fraction", {})
    same_n = [r for r in judged(e) if r["state_dim"] == c["state_dim"]]
    at = others(e, "seq_len", lambda v: f"T={size(v)}", column="misprediction",
                fmt=lambda v: f"{v:.0f}x", exclude=p, state_dim=c["state_dim"])
    worst = max(same_n, key=lambda r: r["misprediction"])
    if worst["seq_len"] == max(r["seq_len"] for r in same_n):
        at[-1] += " (worst at the longest sequence)"
    names = {"selective_scan": "scan", "elementwise_axpby": "axpby", "gemm_bf16": "GEMM"}
    roof = ", ".join(f"{names.get(k, k)} {v:.2f}" for k, v in fractions.items())
    roof = f"; roofline fraction {roof}" if roof else ""
    return (f"scan takes {e.measured.value:.0f}x its FLOP-count prediction",
            f"d_model={c['d_model']}, N={c['state_dim']}, T={size(p['seq_len'])}; "
            f"{', '.join(at)}{roof}")


def _b1(e: EvidenceRecord) -> tuple[str, str]:
    c, p = e.conditions, primary(e, "state_dim")
    at = others(e, "state_dim", lambda v: f"N={v}", column="forward_share",
                fmt=lambda v: f"{v:.2f}")
    return (f"{e.measured.value:.2f} of a training step's kernel time in matmul stages",
            f"N={c['state_dim']}; forward only {p['forward_share']:.2f}; forward {', '.join(at)}; "
            f"FLOP share {p['flop_share']:.2f}")


def _b2(e: EvidenceRecord) -> tuple[str, str]:
    data = e.statistics.get("data", {})
    base, claimed = data["base"], data["claimed"]
    wide = [r for r in judged(e) if r["width"] != base["width"]]

    def at(r: dict[str, Any]) -> str:
        return f"P={r['head_dim']}, H={r['heads']}"

    rest = "".join(f"; {at(r)} (width {r['width']}) {r['step_extra_gib']:.2f} GiB" for r in wide)
    return (f"step memory {at(claimed)} / {at(base)} {e.measured.value:.3f}",
            f"{e.conditions.get('pass')} step at equal width {base['width']}, "
            f"N={e.conditions['state_dim']}, T={size(e.conditions['seq_len'])}: memory the step "
            f"adds {claimed['step_extra_gib']:.2f} vs {base['step_extra_gib']:.2f} GiB, time "
            f"{claimed['step_ms']:.2f} vs {base['step_ms']:.2f} ms{rest}")


def _b3(e: EvidenceRecord) -> tuple[str, str]:
    first = min(judged(e), key=lambda r: r["seq_len"])
    cross = e.measured.value
    return (f"crossover at {measured(e, 'tokens')}",
            f"quadratic {1 / first['ratio']:.1f}x faster at T={size(first['seq_len'])}, chunked "
            f"faster from ~{round(cross, -2):.0f} tokens")


def _b4(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    best = {}
    for r in judged(e):
        if r["state_dim"] not in best or r["ms"] < best[r["state_dim"]]["ms"]:
            best[r["state_dim"]] = r
    mine = best[c["state_dim"]]["chunk_size"]
    rest = "; ".join(f"at N={n} the best chunk is {r['chunk_size']}"
                     for n, r in sorted(best.items()) if n != c["state_dim"])
    return (f"t(Q={c['chunk_size']}) / t(best, Q={mine}) {e.measured.value:.2f}",
            f"N={c['state_dim']}; {rest}" if rest else f"N={c['state_dim']}")


def _b5(e: EvidenceRecord) -> tuple[str, str]:
    top = max(judged(e), key=lambda r: r["seq_len"])
    at = [f"{x1(r['ratio'])} at T={r['seq_len']}" for r in judged(e) if r is not top]
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
    c = e.conditions
    sums = [r for r in judged(e) if r.get("row") == "sum"]
    p = point(e, row="sum", elements=c["elements"])
    at = [f"{r['not_guaranteed_distinct']} at {size(r['elements'])}"
          for r in sums if r is not p]
    text = (f"{size(c['elements'])} fp32; not_guaranteed {', '.join(at)}; the three levels give "
            f"{p['levels_distinct']} different bit patterns")
    for r in judged(e):
        if r.get("row") == "scatter":
            text += (f"; scatter-add `{r['op']}` over {r['bins']} bins: "
                     f"{r['nondeterministic_distinct']} distinct in {r['repeats']} runs, "
                     f"{r['deterministic_distinct']} with deterministic algorithms at "
                     f"{x1(r['ratio'])} the time")
    return (f"CUB over {p['repeats']} runs: not_guaranteed {p['not_guaranteed_distinct']} "
            f"distinct sums, run_to_run {p['run_to_run_distinct']}, gpu_to_gpu "
            f"{p['gpu_to_gpu_distinct']}", text)


def _d2(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    parts = sorted({(r["sm_count"], r["accelerators"]) for r in judged(e)})
    per_input = e.statistics.get("data", {}).get("summary", {}).get("distinct_per_seed", [])
    sim = "simulation on one GPU" if c.get("simulation") else "measured"
    most = max(r["repeat_distinct"] for r in judged(e))
    repeats = ("repeats bitwise" if most == 1 else f"gives up to {most} distinct sums")
    return (f"{sim}: {' / '.join(map(str, per_input))} distinct sums over {len(parts)} "
            "partitions, per input",
            f"**{sim}** (`conditions.simulation`): {size(c['elements'])} fp32 split as the SM "
            f"counts {', '.join(str(n) for n, _ in parts)} of the KB's accelerators would split "
            f"it; each partition {repeats} over {c['repeats']} runs")


def _d3(e: EvidenceRecord) -> tuple[str, str]:
    c = e.conditions
    read = _row_of_measured(e, "ratio")
    bound = [size(r["elements"]) + (" (the claim's)" if r["elements"] == c["elements"] else "")
             for r in judged(e) if r.get("launch_bound")]
    rest = [f"{x1(r['ratio'])} at {size(r['elements'])}" for r in judged(e)
            if r is not read and not r.get("launch_bound") and r["elements"] > c["elements"]]
    # a reading point the host could not keep busy in some round is not judged (inconclusive)
    state = ("launch-bound in a round, so not judged" if read.get("launch_bound")
             else "device-bound")
    also = f"; also {', '.join(rest)} (not judged)" if rest else ""
    return (f"CUB gpu_to_gpu / run_to_run {measured(e)}",
            f"read at {size(read['elements'])} fp32, the fixed reading point (the claim's "
            f"point or {size(READ_AT)}, whichever is larger; judge revision {e.judge_revision}): "
            f"{state}; "
            f"launch-bound here: {', '.join(bound) or 'none'}; event-timed{also}")


def _d3_figure(e: EvidenceRecord) -> tuple[str, str]:
    read = [r for r in judged(e) if r["elements"] == READ_AT]
    at = ", ".join(f"{g3((r['ratio'] - 1) * 100)}% at {size(r['elements'])}" for r in read)
    return (f"gpu_to_gpu overhead {measured(e, '%')}",
            f"CUB, fp32, read at {size(READ_AT)} only (judge revision {e.judge_revision}): {at}")


NOTES: dict[str, Callable[[EvidenceRecord], tuple[str, str]]] = {
    "selective-ssm-scan/scan-misses-tensor-cores": _a1,
    "mamba2-ssd/ssd-vs-fused-scan": _a2,
    "mamba2-ssd/ssd-attention-crossover": _a3_crossover,
    "mamba2-ssd/ssd-vs-attention-16k": _a3_ratio,
    "samba/mamba-trains-slower-than-mlp": _a4,
    "gated-linear-attention/shared-decay-tensor-core-friendly": _a5,
    "selective-ssm-scan/flops-predict-time-poorly": _a6,
    "mamba2-ssd/training-matmul-dominated": _b1,
    "mamba2-ssd/head-dim-vram-pressure": _b2,
    "mamba2-ssd/quadratic-wins-short": _b3,
    "mamba2-ssd/default-chunk-size": _b4,
    "mamba2-ssd/kernel-vs-pytorch": _b5,
    "dense-gemm/gemm-ruggedness": _c2,
    "low-rank-gemm/lowrank-efficient-consumer": _c3,
    "int8-gemm/int8-native-beats-emulated": _c4,
    "gpu-reduction/determinism-levels": _d1,
    "gpu-reduction/run-to-run-not-cross-hardware": _d2,
    "gpu-reduction/gpu-to-gpu-overhead": _d3,
    "gpu-reduction/gpu-to-gpu-overhead-figure": _d3_figure,
}


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def block_verdicts(src: Sources) -> str:
    text = table(["claim (A1-D4)", "magnitude", "pass", "verdict", "measured [p10/p90 band]",
                  "conditions; where it holds and where it stops",
                  "other implementations: verdict, measured"], verdict_rows(src))
    # the sides whose default is a library (the algorithm the claim is about), read off the
    # newest run that judged the bundled kernels beside it
    wide = {claim: w for claim in CLAIMS if (w := widest(src, claim)) is not None}
    sensitive = [f"`{claim}` ({CLAIMS[claim]})" for claim in CLAIMS
                 if claim in src.pooled and src.pooled[claim].implementation_sensitive]
    # claims whose reported (first) judgement is not on the bundled kernels, where they exist
    first_peer = sorted({(impl, f"{CLAIMS[claim]}{' figure' if 'figure' in claim else ''}")
                         for claim, e in wide.items()
                         for side, impl in e.judgements[0].combination.items()
                         if impl != "bundled" and any(j.combination.get(side) == "bundled"
                                                      for j in e.judgements[1:])})
    peers = "; ".join(f"{impl} for {', '.join(lab for i, lab in first_peer if i == impl)}"
                      for impl in dict.fromkeys(i for i, _ in first_peer))
    sentence = (
        "The verdict column is pooled over every run whose kernels are the current ones (as "
        "`flopkb claims` shows it, with the number of runs that agree, and the pooled figure: "
        "every run's rounds merged and judged again, an interval that covers the spread between "
        "runs); the measured column is the newest run's first judgement: the bundled kernels"
        + (f", except {peers} (the algorithm the claim is about)" if peers else "")
        + "; the last column names the sides the other judgements swap, from the newest run "
        "that judged several implementations. "
        + (f"Implementation-sensitive (the verdict changes with the implementation): "
           f"{', '.join(sensitive)}." if sensitive else "No claim is implementation-sensitive.")
    )
    return text + "\n" + paragraph(sentence)


def _command(e: EvidenceRecord) -> str:
    """The verify command an evidence record was written by, without the output options."""
    return re.sub(r" --(format json|out \S+)", "", e.command)


def _run_facts(src: Sources) -> dict[str, str]:
    json_path, run = src.json("verify_*_final.json")
    ids = {r.get("evidence") for r in run["results"]}
    cals = [e for e in src.evidence if e.claim is None and e.id in ids]
    if not cals:
        raise MissingFigure(f"{json_path}: lists no calibration evidence in records/evidence/")
    cal = cals[0]
    m = cal.machine
    log_path, log = src.log
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
        "copy": f"{data['copy_gbps']:.0f}", "copy_p10": f"{data['copy_gbps_high']:.0f}",
        "log": log_path, "json": json_path, "claims": str(len(CLAIMS)), "calibration": cal.id,
        "command": _command(cal),
    }


def _portability(src: Sources) -> str:
    """The portability run against the full run's default (first) combination, claim by claim."""
    path, run = src.json("verify_*_portable.json")
    _, full = src.json("verify_*_final.json")
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
            "and gave "
            f"{verdicts} (`{path}`).")


def paragraph(text: str) -> str:
    return textwrap.fill(text.replace("\n", " "), width=100, break_on_hyphens=False) + "\n"


def block_verify_run(src: Sources) -> str:
    f = _run_facts(src)
    return paragraph(
        f"`{f['command']}` on one {f['gpu']} ({f['sms']} SMs, driver {f['driver']}, CUDA "
        f"{f['cuda']}, torch {f['torch']}, triton {f['triton']}), {f['date']}, every "
        f"implementation combination: {f['in_process']} s in-process (`{f['json']}`; "
        f"{f['wall']}). Ceilings measured in the same run: cuBLAS bf16 {f['gemm']}³ "
        f"{f['tflops']} TFLOP/s median ({f['tflops_p10']} at p10), device copy {f['copy']} GB/s. "
        "bf16 inputs, fp32 state, 32K tokens per point unless stated; the `pass` column says "
        "whether a claim is judged on the forward pass or on a training step (forward+backward). "
        "Evidence: `records/evidence/`, one YAML record per claim with one judgement per "
        "implementation combination, and `<evidence id>.png` beside it; log: "
        f"`{f['log']}`. " + _portability(src) + " " + _stability(src)
    )


def _stability(src: Sources) -> str:
    """The separate-process runs of the default suite (bench/device/stability_run.sh)."""
    runs = [r for r in src.verify_runs if r["json"] and "_run" in r["json"]
            and "impl" not in r["json"]]
    if not runs:
        return ""
    serials = []
    for r in runs:
        gpu = src.root / r["json"].replace(".json", ".gpu.txt")
        rows = gpu.read_text().splitlines()[1:] if gpu.is_file() else []
        serials.append(rows[0].split(",")[1].strip() if rows else "?")
    machines = len(set(serials))
    took = ", ".join(f"{r['duration_s']:.0f}" for r in runs)
    return (f"Then `{runs[0]['command']}` (the default suite, bundled kernels, 3 rounds per claim "
            f"point) {len(runs)} times, each in a process of its own, on {machines} H200 machines "
            f"(GPU serials {', '.join(serials)} in order; "
            f"`bench/results/verify_h200_run<N>.gpu.txt`), {runs[0]['start'].date().isoformat()}: "
            f"{took} s in-process "
            "(`bench/results/verify_h200_run<N>.json`, `.log`; the first on a cold machine). The "
            "verdict column pools them with the run above; the measured column is the newest "
            "run's.")


def block_other_verdicts(src: Sources) -> str:
    """Measured claims outside the A1-D4 table (the kernel-level rows declared later), pooled."""
    from flopkb.claims import list_claims

    kb, _ = load_kb(src.root)
    rows = []
    for r in list_claims(kb):
        p = src.pooled.get(r["claim"])
        if r["claim"] in CLAIMS or p is None:
            continue
        verdict = p.text()
        shown = f"**{verdict}**" if verdict.startswith(("refuted", "disagreeing")) else verdict
        figure = p.figure.text() if p.figure else "-"
        why = r.get("not_verifiable") or ""
        rows.append([f"`{r['claim']}`", r["magnitude"], shown, figure, why or "-"])
    if not rows:
        return paragraph("No other claim has evidence on this part.")
    return table(["claim", "magnitude", f"verdict on {ACCELERATOR}", "pooled over the runs' rounds",
                  "judged where"], rows) + "\n" + paragraph(
        "Rows declared after the A1-D4 table (their experiments are YAML declarations like the "
        "rest), pooled over the same runs. Each refutation is of the claim's figure on this part "
        "with the bundled kernels; docs/verify.md gives each experiment's conditions.")


def block_verify_run_docs(src: Sources) -> str:
    f = _run_facts(src)
    return paragraph(
        f"`{f['command']}` on one {f['gpu']} ({f['sms']} SMs, {f['l2']} MiB L2, driver "
        f"{f['driver']}, CUDA {f['cuda']}, torch {f['torch']}, triton {f['triton']}), "
        f"{f['date']}: {f['in_process']} s in-process (`{f['json']}`; {f['wall']}; log "
        f"`{f['log']}`); ceilings measured in the same run: {f['tflops']} TFLOP/s bf16 median "
        f"({f['tflops_p10']} at p10), {f['copy']} GB/s copy. bf16 inputs, fp32 state; the "
        "`pass` column says forward or forward+backward. " + _portability(src)
    )


def block_calibration(src: Sources) -> str:
    # the newest calibration: its id and its figures (they once came from two records)
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
        f"On the H200 (`{cal.id}`): {flops:.0f} TFLOP/s\n"
        f"({flops / specs['bf16_tensor_flops']:.2f} of {specs['bf16_tensor_flops']:g} dense) and "
        f"{copy:.0f} GB/s ({copy / 1000 / specs['hbm_bandwidth']:.2f} of "
        f"{specs['hbm_bandwidth']:g} TB/s).\n"
    )


def _slash(values: list[float], fmt: str) -> str:
    return " / ".join(format(v, fmt) for v in values)


def _target(ratios: list[float], limit: float, op: str) -> str:
    ok = all(r <= limit for r in ratios) if op == "<=" else all(r >= limit for r in ratios)
    return "met" if ok else "missed"


def _target_at(ratios: list[float], limit: float, shapes: list[str]) -> str:
    """`met`, or which of the measured shapes miss a `<= limit` target."""
    missed = [s for r, s in zip(ratios, shapes, strict=True) if r > limit]
    if not missed:
        return "met"
    return f"**missed** at {len(missed)} of {len(ratios)} shapes ({', '.join(missed)})"


# The selective scan's default forward variant, as `_launch_forward` (kernels/selective_scan/
# scan.py) picks it: narrow one-warp programs for states up to SMALL_STATE when softplus + bias
# are tiled (the layer's call), the tiled softplus otherwise with them, the base kernel without.
SCAN_SOURCE = Path("kernels") / "selective_scan" / "scan.py"
SCAN_BACKWARD_DEFAULT = "bd_quarter_w1"  # kernels/selective_scan/backward.py: "the default"


def _small_state(src: Sources) -> int:
    # the kernel code of this checkout, not a measured source
    found = re.search(r"^SMALL_STATE = (\d+)", (ROOT / SCAN_SOURCE).read_text(), re.M)
    if found is None:
        raise MissingFigure(f"{SCAN_SOURCE}: no SMALL_STATE")
    return int(found.group(1))


def _scan_forward_default(shape: dict[str, Any], small: int) -> str:
    if shape["layer"]:
        return "sp_tile_bd_quarter_w1" if shape["N"] <= small else "sp_tile"
    return "base"


def _scan_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(SCAN_BWD)
    small = _small_state(src)
    rows, notes = [], []
    for layer in (False, True):
        shapes = [s for s in data["shapes"] if s["shape"]["layer"] == layer]
        if not shapes:
            continue
        labels = [f"D={s['shape']['D']} N={s['shape']['N']}" for s in shapes]
        first = shapes[0]["shape"]
        where = f"B={first['B']}, T={first['T']}; {' / '.join(labels)}"
        names = [_scan_forward_default(s["shape"], small) for s in shapes]
        for s, name in zip(shapes, names, strict=True):
            if not s["impls"].get(f"ours:fwd:{name}", {}).get("correct"):
                raise MissingFigure(f"{path}: no correct ours:fwd:{name} at {s['shape']}")
        fwd = [s["impls"][f"ours:fwd:{n}"]["ms"]["fwd"] for s, n in zip(shapes, names,
                                                                       strict=True)]
        peer = [s["impls"]["mamba_cuda"]["ms"]["fwd"] for s in shapes]
        train = [s["impls"][f"ours:train:{SCAN_BACKWARD_DEFAULT}"]["ms"]["fwd+bwd"]
                 for s in shapes]
        peer_train = [s["impls"]["mamba_cuda"]["ms"]["fwd+bwd"] for s in shapes]
        r_fwd = [a / b for a, b in zip(fwd, peer, strict=True)]
        r_train = [a / b for a, b in zip(train, peer_train, strict=True)]
        d2048 = [r for r, s in zip(r_train, shapes, strict=True) if s["shape"]["D"] == 2048]
        call = "layer call (softplus + bias)" if layer else "plain call"
        by_n: dict[str, list[str]] = {}
        for s, n in zip(shapes, names, strict=True):
            by_n.setdefault(n, []).append(f"N={s['shape']['N']}")
        variants = (f"`{names[0]}`" if len(by_n) == 1 else ", ".join(
            f"`{n}` at {'/'.join(dict.fromkeys(at))}" for n, at in by_n.items()))
        rows.append([f"selective scan forward, {call}; default variant {variants}", where,
                     f"{_slash(fwd, '.2f')} ms",
                     f"Mamba CUDA `selective_scan_cuda` {_slash(peer, '.2f')}",
                     f"{_slash(r_fwd, '.2f')}x",
                     f"≤ 1.05x (issue 9): {_target(r_fwd, 1.05, '<=')}"])
        rows.append([f"selective scan forward+backward, {call} (backward "
                     f"`{SCAN_BACKWARD_DEFAULT}`)", "same", f"{_slash(train, '.2f')} ms",
                     f"Mamba CUDA fwd+bwd {_slash(peer_train, '.2f')}",
                     f"{_slash(r_train, '.2f')}x",
                     f"≤ 1.2x at D=2048 (issue 10): {_target(d2048, 1.2, '<=')}"])
        measured = {(s["shape"]["D"], s["shape"]["N"]) for s in shapes}
        gone = [f"D={d} N={n}" for d in (2048, 4096) for n in (16, 64) if (d, n) not in measured]
        if gone and not layer:
            notes.append(f"issue 9's {', '.join(gone)} is not in this run")
    return path, rows, "; ".join(notes)


def _ssd_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(SSD_BWD)
    shapes = sorted(data["shapes"], key=lambda s: (s["shape"]["N"], s["shape"]["T"]))
    labels = [f"N={s['shape']['N']} T={size(s['shape']['T'])}" for s in shapes]
    first = shapes[0]["shape"]

    def row(s: dict[str, Any], name: str) -> dict[str, Any]:
        found = next((r for r in s["rows"] if r["name"] == name), None)
        if found is None or not found.get("check", {}).get("correct", True):
            raise MissingFigure(f"{path}: no correct {name} at {s['shape']}")
        return found

    def ms(name: str, p: str) -> list[float]:
        return [row(s, name)["timing"][p]["median_ms"] for s in shapes]

    ours, mamba, fla = "ours:q256", "mamba_ssm:chunk256", "fla:chunk_simple_gla"
    cfg = row(shapes[0], ours)["config"]
    peer = row(shapes[0], mamba)
    f_row = row(shapes[0], fla)
    fwd, m_fwd, f_fwd = ms(ours, "fwd"), ms(mamba, "fwd"), ms(fla, "fwd")
    tr, m_tr = ms(ours, "fwd_bwd"), ms(mamba, "fwd_bwd")
    r_m, r_f = [a / b for a, b in zip(fwd, m_fwd, strict=True)], [
        a / b for a, b in zip(fwd, f_fwd, strict=True)]
    r_tr = [a / b for a, b in zip(tr, m_tr, strict=True)]
    refusal = (f_row.get("not_run_passes") or {}).get("fwd_bwd")
    no_d = "without the D" in f_row.get("map", "")
    where = (f"B·T={size(first['B'] * first['T'])}, H={first['H']}, P={first['P']}; "
             f"{' / '.join(labels)}")
    name = f"chunk {cfg['chunk_size']}, `q256`"
    rows = [
        [f"SSD chunked forward ({name})", where, f"{_slash(fwd, '.3f')} ms",
         f"mamba_ssm {peer['version']} `{peer['api']}` (chunk {peer['chunk_size']}) "
         f"{_slash(m_fwd, '.3f')}", f"{_slash(r_m, '.2f')}x", "-"],
        ["", "", "", f"fla {f_row['version']} `chunk_simple_gla` {_slash(f_fwd, '.3f')}"
         + (" (without the D skip term)" if no_d else ""), f"{_slash(r_f, '.2f')}x",
         f"≤ 1.0x (issue 9): {_target_at(r_f, 1.0, labels)}"],
        [f"SSD chunked forward+backward ({name})", "same", f"{_slash(tr, '.3f')} ms",
         f"mamba_ssm {_slash(m_tr, '.3f')}", f"{_slash(r_tr, '.2f')}x",
         f"≤ 1.0x (issue 10): {_target_at(r_tr, 1.0, labels)}"],
        ["", "", "", "fla: not run" if refusal else "fla", "-",
         "≤ 1.2x (issue 10): not measured" if refusal else "-"],
    ]
    q128 = "ours:q128"
    measured = {s["shape"]["T"] for s in shapes}
    gone = [size(t) for t in (2048, 4096, 16384) if t not in measured]
    notes = [f"the issues' T={', '.join(gone)} is not in the SSD run"] if gone else []
    if "2K" in gone and (src.results / SSD_BWD_T2K).is_file():
        notes.append(_t2k_note(src))
    if all(any(r["name"] == q128 for r in s["rows"]) for s in shapes):
        r128 = [a / b for a, b in zip(ms(q128, "fwd_bwd"), m_tr, strict=True)]
        f128 = [a / b for a, b in zip(ms(q128, "fwd"), f_fwd, strict=True)]
        notes.append(f"chunk 128 (`q128`) does forward+backward at {_slash(r128, '.2f')}x of "
                     f"mamba_ssm and the forward at {_slash(f128, '.2f')}x of fla")
    if no_d:
        notes.append("fla's time leaves out the D·x skip term that ours computes")
    if refusal:
        notes.append(f"fla's backward refuses to run on Triton {data['machine']['triton']} on "
                     f"this Hopper GPU (\"{refusal.split(': ', 1)[-1].split('. ')[0]}\")")
    return path, rows, "; ".join(notes)


def _t2k_note(src: Sources) -> str:
    """T=2K forward+backward from its own run, beside mamba_ssm of that run."""
    path, data = src.json(SSD_BWD_T2K)
    parts = []
    for shape in sorted(data["shapes"], key=lambda s: s["shape"]["N"]):
        t = {r["name"]: r["timing"]["fwd_bwd"]["median_ms"] for r in shape["rows"]
             if "fwd_bwd" in r["timing"]}
        peer = next(v for k, v in t.items() if k.startswith("mamba_ssm"))
        ours = [f"{t[n]:.3f} ({t[n] / peer:.2f}x)" for n in ("ours:q256", "ours:q128") if n in t]
        parts.append(f"N={shape['shape']['N']}: q256 / q128 {' / '.join(ours)} ms against "
                     f"mamba_ssm {peer:.3f}")
    return (f"T=2K forward+backward, from its own run (`{path}`, {data['started'][:10]}, "
            f"B=16, 3 rounds): {'; '.join(parts)}")


def _cub_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(REDUCTION)
    rows = sorted(data["rows"], key=lambda r: r["elements"])

    def launch_bound(r: dict[str, Any]) -> bool:
        return any(v.get("launch_bound") for k, v in r["variants"].items() if k.startswith("cub"))

    sizes = " / ".join(size(r["elements"]) + ("†" if launch_bound(r) else "") for r in rows)
    g2g = [r["ratios"]["gpu_to_gpu/run_to_run"] for r in rows]
    r2r = [r["ratios"]["run_to_run/not_guaranteed"] for r in rows]
    ours = [r["ratios"]["ordered/atomic (graph)"] for r in rows]
    cub = data["cub"].split(" cub::")[0]
    return path, [
        [f"fixed-order / atomic sum (graph-timed) vs {cub} determinism levels",
         f"{sizes} fp32", f"fixed order / atomic {_slash(ours, '.2f')}x",
         f"CUB run_to_run / not_guaranteed {_slash(r2r, '.2f')}x; gpu_to_gpu / run_to_run "
         f"{_slash(g2g, '.2f')}x", "-", "-"],
    ], ("† launch-bound: CUB's single-phase call allocates, so it is event-timed (no CUDA "
        "graph), and at these sizes the host issues calls more slowly than the GPU runs them")


def block_kernels(src: Sources) -> str:
    dense_path, dense = src.json(DENSE)
    scan_path, scan_rows, scan_note = _scan_rows(src)
    ssd_path, ssd_rows, ssd_note = _ssd_rows(src)
    cub_path, cub_rows, cub_note = _cub_rows(src)

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
    speed = [t["speed_vs_peer"] for t in tri]
    rows = scan_rows + ssd_rows + cub_rows + [
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
    _, scan_data = src.json(SCAN_BWD)
    _, ssd_data = src.json(SSD_BWD)
    _, red_data = src.json(REDUCTION)
    dated = [(scan_path, scan_data["started"]), (ssd_path, ssd_data["started"]),
             (cub_path, red_data["timestamp"]), (dense_path, dense["timestamp"])]
    notes = "; ".join(n for n in (scan_note, ssd_note, cub_note) if n)
    rounds = min(scan_data["rounds"], ssd_data["rounds"], red_data["rounds"])
    sources = ", ".join(f"`{p}` ({t[:10]})" for p, t in dated)
    return (table(head, rows) + "\n" + paragraph(
        f"Scan, SSD and CUB rows: the median of {rounds} rounds' medians, bf16 inputs, fp32 "
        f"state. {notes[0].upper()}{notes[1:]}. The GEMM, INT8, reduction and axpby rows are "
        f"from the earlier dense benchmark. Sources: {sources}."))


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


def block_suite_beside_hog(src: Sources) -> str:
    """The whole test command beside a CPU-bound process (bench/suite_beside_hog.sh)."""
    path, h = src.json("suite_beside_hog.json")
    m = h["machine"]
    parts = []
    for a in h["attempts"]:
        runs = a["runs"]
        ok = sum(1 for r in runs if r["rc"] == 0)
        walls = ", ".join(f"{r['wall_s'] / 60:.0f}" for r in runs)
        failed = sorted({t.split("::")[-1] for r in runs for t in r["failed"]})
        note = f" ({a['note']})" if a.get("note") else ""
        parts.append(f"at {a['commit'][:7]}{note}: {ok} of {len(runs)} runs passed, {walls} min "
                     "wall" + (f"; failed: `{'`, `'.join(failed)}`" if failed else ""))
    return paragraph(
        f"Beside one CPU-bound process on {m['cpus']} cores ({m['cpu']}), the README's test "
        "command (`.ci/run` in a fresh clone) three times in a row (`bench/suite_beside_hog.sh`, "
        f"`{path}`): " + "; ".join(parts) + ".")


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
    ssd_path, ssd = src.json(SSD_BWD)
    dense_path, dense = src.json(DENSE)
    first = min(ssd["shapes"], key=lambda s: (s["shape"]["N"], s["shape"]["T"]))
    ours = next(r for r in first["rows"] if r["name"] == "ours:q256")["roofline"]
    scan = src.of("selective-ssm-scan/flops-predict-time-poorly")
    p = _row_of_measured(scan, "misprediction")
    attention = [r["roofline_fraction"] for r in dense["results"] if r["section"] == "attention"]
    return paragraph(
        f"SSD chunked (`q256`) reaches {ours['fwd']['frac_roofline']:.2f} of its roofline in the "
        f"forward ({ours['fwd']['tflops']:.0f} TFLOP/s) and {ours['fwd_bwd']['frac_roofline']:.2f} "
        f"forward+backward (N={first['shape']['N']}, T={size(first['shape']['T'])}, "
        f"`{ssd_path}`); the selective scan {p['scan_roofline_fraction']:.2f} of its byte floor "
        f"(N={p['state_dim']}, T={size(p['seq_len'])}, A6's evidence; a sequential chain, like "
        f"Mamba's own kernel); attention (SDPA flash) {min(attention):.2f}-{max(attention):.2f} "
        f"of the cuBLAS peak (`{dense_path}`, {dense['timestamp'][:10]}). Details: the READMEs "
        "in `kernels/*/`."
    )


# The context at which the model table compares architectures (Samba's 128K prompt length).
MODEL_CONTEXT = 131072


def _gib(value: float) -> str:
    """Bytes in GiB from 1 GiB up, else MiB; three significant digits, never an exponent."""
    x, unit = (value / 2**30, "GiB") if value >= 2**30 else (value / 2**20, "MiB")
    return f"{x:,.0f} {unit}" if x >= 100 else f"{x:.3g} {unit}"


def block_model_table(src: Sources) -> str:
    """Computed parameters of every architecture record and its roofline bounds on the H200."""
    from flopkb.architecture.show import model_show

    kb = kb_figures.kb_of(src.root)
    rows = []
    for aid in sorted(kb.architectures):
        d = model_show(kb, aid, context=MODEL_CONTEXT, on=[ACCELERATOR])
        c, r = d["computed"], d["rooflines"][ACCELERATOR]
        reported = d["parameters_reported"]
        params = f"{c['parameters'] / 1e9:.2f}B" + (f" ({reported / 1e9:g}B)" if reported else "")
        if "vocabulary" in " ".join(c["assumptions"]):
            params += ", no embeddings"
        rows.append([
            f"`{aid}`", params, f"{c['active_parameters'] / 1e9:.2f}B",
            f"{c['attention_share']:.3g}%", _gib(c["kv_cache_bytes"]), _gib(c["state_bytes"]),
            f"{r['prefill_tokens_per_s']:,.0f}", f"{r['decode_tokens_per_s']:,.0f}",
            "-" if r["max_batch"] is None else str(r["max_batch"]),
        ])  # fmt: skip
    from flopkb.architecture.show import hardware_values
    from flopkb.hardware.model import HardwareModel

    hw = hardware_values(HardwareModel(kb), ACCELERATOR, "bf16")
    head = paragraph(
        f"`flopkb model show ID --context {MODEL_CONTEXT} --on {ACCELERATOR}` for every "
        "architecture record (bf16 weights, KV cache and state; batch 1; computed from the records "
        "by `flopkb.architecture.cost`, reported counts in brackets from each record's source). "
        "Bounds "
        f"are rooflines from {ACCELERATOR}'s datasheet values in the KB "
        f"({hw['bf16_tensor_flops']:g} TFLOP/s bf16, {hw['hbm_bandwidth']:g} TB/s, "
        f"{hw['memory_capacity']:g} GB): upper bounds, not measurements. A largest batch of 0: "
        "the bf16 weights alone do not fit on one part:"
    )
    header = ["architecture", "parameters (reported)", "active", "attention layers",
              f"KV at {size(MODEL_CONTEXT)}", "state", "prefill tok/s bound",
              "decode tok/s bound", f"max batch at {size(MODEL_CONTEXT)}"]  # fmt: skip
    return head + "\n" + table(header, rows)


def block_model_claims(src: Sources) -> str:
    """The model-level rows whose figure is computed from architecture records."""
    from flopkb.architecture.show import shown
    from flopkb.claims import list_claims

    kb = kb_figures.kb_of(src.root)
    rows = []
    for r in list_claims(kb):
        if not r["computed_from_architectures"]:
            continue
        got = "; ".join(f"{c['what']}: {shown(c['value'], c['unit'])}"
                        for c in r["computed_from_architectures"])
        rows.append([f"`{r['claim']}`", r["magnitude"], r["basis"], got])
    return table(["claim", "magnitude", "basis", "computed from the architecture records"], rows)


def _kb_figures() -> Any:
    """bench/kb_figures.py, loaded by path (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location("kb_figures", Path(__file__).with_name(
        "kb_figures.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kb_figures = _kb_figures()

def _run_cell(e: EvidenceRecord, stale: bool) -> str:
    m = e.measured
    figure = (f" {value_text(m)} {band(m.low, m.high)}" if m is not None and m.value is not None
              and m.low is not None and m.high is not None else "")
    return f"{e.verdict.value}{figure}" + (" (stale)" if stale else "")


def _inside(m: Measured | None, other: Measured | None) -> bool | None:
    """Whether `m`'s value lies in `other`'s band (None: one of them has no band)."""
    if m is None or other is None or None in (m.value, other.low, other.high):
        return None
    return other.low <= m.value <= other.high


def _when(run: dict[str, Any]) -> str:
    return run["start"].strftime("%Y-%m-%d %H:%M")


def _columns(src: Sources) -> list[dict[str, Any]]:
    """The runs the agreement table shows: those with a fresh record of a table claim."""
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    wanted = {e.id for c in CLAIMS for e in src.runs(c)}
    return [r for r in src.verify_runs if r["ids"] & wanted & fresh]


def _round_values(src: Sources, e: EvidenceRecord) -> list[float]:
    """Each of `e`'s rounds judged alone (the value a one-round run would have reported)."""
    from flopkb.evidence.rederive import judge_stored
    from flopkb.evidence.rounds import merge_rounds
    from flopkb.grammar.magnitude import parse_magnitude

    mag = parse_magnitude((e.expected or {}).get("text") or "qualitative")
    out = []
    for r in e.rounds:
        data, sweep = merge_rounds([r.model_dump(mode="json")])
        m = judge_stored(src.kb, e, data, sweep, mag).measured
        if m is not None and m.value is not None:
            out.append(float(m.value))
    return out


def _spread(values: list[float]) -> float | None:
    mid = statistics.median(values) if values else 0
    return (max(values) - min(values)) / abs(mid) if len(values) > 1 and mid else None


def agreement_rows(src: Sources) -> tuple[list[str], list[list[str]]]:
    """One row per claim: each run's verdict and figure, whether the verdicts agree, whether each
    run's value lies inside every other run's band, and the pooled figure."""
    columns = _columns(src)
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    rows = []
    for claim, label in CLAIMS.items():
        runs = [e for e in src.runs(claim) if e.id in fresh]
        cells = []
        for col in columns:
            mine = [e for e in runs if e.id in col["ids"]]
            cells.append(_run_cell(mine[0], False) if mine else "-")
        verdicts = {e.verdict.value for e in runs}
        agree = "-" if len(runs) < 2 else ("yes" if len(verdicts) == 1 else "**no**")
        inside = [_inside(a.measured, b.measured) for a in runs for b in runs if a is not b]
        figures = ("-" if len(runs) < 2 or None in inside
                   else "yes" if all(inside) else "**no**")
        p = src.pooled.get(claim)
        rows.append([f"`{claim}` ({label})", *cells, agree, figures,
                     p.figure.text() if p is not None and p.figure else "-"])
    heads = [f"run {_when(c)}" for c in columns]
    return heads, rows


def spread_rows(src: Sources) -> list[list[str]]:
    """Per claim with two or more runs that store rounds: the spread of its rounds inside each
    run against the spread of the runs' values, both relative to the median."""
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    rows = []
    for claim, label in CLAIMS.items():
        runs = [e for e in src.runs(claim) if e.id in fresh and e.rounds and e.measured]
        if len(runs) < 2:
            continue
        within = [x for x in (_spread(_round_values(src, e)) for e in runs) if x is not None]
        between = _spread([float(e.measured.value) for e in runs])
        if not within or between is None:
            continue
        w = max(within)
        rows.append([f"`{claim}` ({label})", str(len(runs)), f"{100 * w:.1f}%",
                     f"{100 * between:.1f}%", "yes" if between > w else "no"])
    return rows


def block_run_agreement(src: Sources) -> str:
    heads, rows = agreement_rows(src)
    text = table(["claim (A1-D4)", *heads, "verdicts agree",
                  "each value inside the other runs' bands", "pooled over the runs' rounds"],
                 rows)
    both = [r for r in rows if r[len(heads) + 1] != "-"]
    same = sum(1 for r in both if r[len(heads) + 1] == "yes")
    held = sum(1 for r in both if r[len(heads) + 2] == "yes")
    legend = "; ".join(
        f"{_when(c)}: `{c['command']}`" + (f" (`{c['json']}`, {c['duration_s']:.0f} s)"
                                           if c["json"] else "")
        for c in _columns(src))
    spread = spread_rows(src)
    beyond = [r for r in spread if r[-1] == "yes"]
    worst = max(beyond, key=lambda r: float(r[3].rstrip("%")) / max(float(r[2].rstrip("%")),
                                                                        1e-9), default=None)
    return (text + "\n" + paragraph(
        f"From the committed evidence on {ACCELERATOR} (`records/evidence/`; {legend}): of the "
        f"{len(both)} claims measured in more than one run whose kernels are the current ones, "
        f"the verdicts agree for {same} and each run's value lies inside every other run's band "
        f"for {held}. A run's band is its rounds merged (three rounds since 2026-12-02; the "
        "2026-12-01 run had one), so a value outside another run's band is a shift between "
        "processes or machines that no round inside one process saw. The last column merges "
        "every run's rounds as one run merges its own and judges them again: that interval "
        "covers the runs' spread, and it is what `flopkb claims` shows beside the verdict.")
        + "\n" + table(["claim", "runs with rounds", "largest spread of one run's rounds",
                           "spread of the runs' values", "runs spread wider"], spread)
        + "\n" + paragraph(
        f"Spreads are (max - min) / median, each round judged alone. For {len(beyond)} of the "
        f"{len(spread)} claims the runs' values spread wider than the rounds inside any one run"
        + (f" (most: {worst[0]}, {worst[3]} between runs against {worst[2]} within one)"
           if worst else "") + "."))


def block_ssd_forward(src: Sources) -> str:
    """The SSD forward beside fla's chunk_simple_gla, D handled alike, and its stages
    (bench/kernels_ssd_fwd.py)."""
    shapes, sources = [], []
    for pattern in ("ssd_fwd_h200_n64.json", "ssd_fwd_h200_n128.json"):
        path, data = src.json(pattern)
        sources.append(f"`{path}` ({data['started'][:10]}, {data['rounds']} rounds)")
        shapes.extend(data["shapes"])
    rows, stages = [], []
    for sh in shapes:
        shape, summ = sh["shape"], sh["summary"]
        at = f"N={shape['N']} T={size(shape['T'])} (B={shape['B']})"
        cells = []
        for key in ("infer_nod", "infer_d"):
            e = summ[key]
            cells.append(f"{e['best_ours_ms']:.3f} (`{e['best_ours'].split(':')[1]}`) / "
                         f"{e['fla_ms']:.3f} = **{e['ours_over_fla']:.2f}x**")
        rows.append([at, *cells, f"{summ['infer_d']['ours_over_mamba_ssm']:.2f}x",
                     f"{summ['best_tiling_per_stage_sum_ms'] / summ['infer_nod']['fla_ms']:.2f}x"])
        byname = {r["name"]: r for r in sh["rows"]}
        best = byname[summ["infer_nod"]["best_ours"]]
        fla = byname.get("fla:chunk_simple_gla")
        if fla is None or "kernels_us" not in best:
            continue
        ours_k, fla_k = best["kernels_us"]["nod"], fla["kernels_us"]["nod"]
        out_ours = ours_k.get("_chunk_scan_kernel", 0) + ours_k.get("_chunk_bmm_kernel", 0)
        st_ours = ours_k.get("_chunk_state_kernel", 0) + ours_k.get("_state_passing_kernel", 0)
        out_fla = fla_k.get("chunk_fwd_kernel_o", 0)
        st_fla = sum(v for k, v in fla_k.items() if k != "chunk_fwd_kernel_o")
        stages.append([at, f"`{best['name'].split(':')[1]}`",
                       f"{out_ours:.0f} / {out_fla:.0f}", f"{st_ours:.0f} / {st_fla:.0f}",
                       f"{sum(ours_k.values()):.0f} / {sum(fla_k.values()):.0f}"])
    head = table(["shape (B·T = 32K, H=32, P=64, bf16)",
                  "no D on either side: ours / fla ms", "D on both (ours fused, fla + addcmul)",
                  "ours / mamba_ssm (D)", "each stage's best tiling / fla (no D)"], rows)
    per_stage = table(["shape", "our tiling", "output stage µs: chunk_scan + chunk_bmm / fla o",
                       "state stage µs: chunk_state + state_passing / fla h + cumsum",
                       "all kernels µs: ours / fla"], stages)
    met = sum(1 for r in rows if float(r[1].split("**")[1].rstrip("x")) <= 1.0)
    return (head + "\n" + per_stage + "\n" + paragraph(
        f"The target (no D on either side, ≤ 1.0x) is met at {met} of {len(rows)} shapes"
        + (": **missed** at the others. " if met < len(rows) else ". ") +
        "Inference forward (no grad), the median of the rounds' medians, ours at its best single "
        "tiling among those swept; the training forward (inputs require grad) gives the same "
        "ratios within 0.07. Kernel times are torch.profiler's per forward, the same way for "
        "both sides. Sources: " + ", ".join(sources) + ", two H200 machines.")
        + ("\n" + _fla_swing(src) if (src.results / SSD_FWD_RERUN).is_file() else ""))


def _fla_rounds(shape: dict[str, Any]) -> list[float]:
    fla = next(r for r in shape["rows"] if r["name"] == "fla:chunk_simple_gla")
    return [x["median_ms"] for k in ("infer_nod", "train_nod") for x in fla["timing"][k]["rounds"]]


def _fla_swing(src: Sources) -> str:
    """fla's forward in the N=64 run and in a re-run of it on another machine: its round
    medians swing between levels, ours hardly moves; the target against fla's fastest round."""
    _, first = src.json("ssd_fwd_h200_n64.json")
    path, again = src.json(SSD_FWD_RERUN)
    before = {sh["shape"]["T"]: sh for sh in first["shapes"]}
    parts, ratios, ours_moves, flipped = [], [], [], []
    for sh in sorted(again["shapes"], key=lambda x: x["shape"]["T"]):
        t = sh["shape"]["T"]
        if t not in before:
            continue
        f1, f2 = _fla_rounds(before[t]), _fla_rounds(sh)
        s1, s2 = before[t]["summary"]["infer_nod"], sh["summary"]["infer_nod"]
        o1, o2 = s1["best_ours_ms"], s2["best_ours_ms"]
        ratios.append(min(o1, o2) / min(f1 + f2))
        ours_moves.append(abs(o2 - o1) / min(o1, o2))
        if s1["ours_over_fla"] <= 1.0 < ratios[-1]:
            flipped.append(f"T={size(t)}")
        parts.append(f"T={size(t)}: fla's round medians {min(f1):.3f}-{max(f1):.3f} ms, then "
                     f"{min(f2):.3f}-{max(f2):.3f}; ours {o1:.3f}, then {o2:.3f}")
    met = sum(1 for r in ratios if r <= 1.0)
    slow = (f" The first run's \"met\" at {', '.join(flipped)} was against a slow level of fla."
            if flipped else "")
    return paragraph(
        f"A re-run at N=64 on another H200 (`{path}`, {again['started'][:10]}, "
        f"{again['rounds']} rounds, no D; six round medians of fla per shape: inference and "
        f"training forward): {'; '.join(parts)}. fla's forward moves between levels from round to "
        "round and from process to process, while ours moved by at most "
        f"{100 * max(ours_moves):.1f}% between the runs. Against fla's fastest round of either "
        f"run, ours at its fastest is {_slash(ratios, '.2f')}x: the target is met at {met} of "
        f"{len(ratios)} N=64 shapes.{slow}")


BLOCKS: dict[str, Callable[[Sources], str]] = {
    "ssd-forward": block_ssd_forward,
    "other-verdicts": block_other_verdicts,
    "suite-beside-hog": block_suite_beside_hog,
    "model-table": block_model_table,
    "model-claims": block_model_claims,
    "run-agreement": block_run_agreement,
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
    # counts of the bundled records themselves (bench/kb_figures.py)
    **kb_figures.BLOCKS,
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
