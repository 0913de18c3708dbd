"""Re-draw the picture of committed evidence records, without a GPU.

    python tools/replot_evidence.py [EVIDENCE.yaml ...] [--out DIR]

Draws each record's claim picture with `flopkb.verify.plots` into --out (default /tmp/flopkb-plots),
never beside the record: committed pictures belong to the GPU run that wrote them. Evidence written
since plots became per claim carries its plot description in `statistics.plot`; older evidence
(the 2026-11-30 H200 run) does not, so LEGACY below rebuilds it from the record's own sweep and
data exactly as the experiment modules of that run did (copied from flopkb/verify/experiments/*.py).
The serving experiments stored none before they had a picture: theirs is built by the experiment's
own `serving.picture.plot_spec`, from the record's data and sweep, as a run builds it now.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flopkb.evidence import catalogue
from flopkb.extras import install_hint
from flopkb.kb import load_files
from flopkb.model import EvidenceRecord
from flopkb.verify.experiments import partition_sim
from flopkb.verify.experiments.serving import picture as serving_picture
from flopkb.verify.plots import ClaimView, render

ROOT = Path(__file__).resolve().parents[1]
TIME = "time (ms)"
SEQ = "sequence length (fixed tokens)"


def _legacy(ev: EvidenceRecord) -> dict[str, Any] | None:
    """The plot description the experiment of `ev` drew with before it was stored (None: none)."""
    data, rows = ev.statistics.get("data", {}), ev.sweep
    cross = (data.get("crossover") or {}).get("value")
    first = rows[0] if rows else {}
    specs: dict[str, dict[str, Any]] = {
        "chunk-size-sweep": {"kind": "lines", "x": "chunk_size", "xlabel": "chunk size Q",
                             "ylabel": TIME, "group": "state_dim", "y": "ms", "logx": True},
        "chunked-vs-quadratic": {"kind": "lines", "x": "seq_len", "xlabel": SEQ, "ylabel": TIME,
                                 "series": {"quadratic form": "quadratic_ms",
                                            "chunked": "chunked_ms"},
                                 "logx": True, "logy": True, "vline": cross,
                                 "vline_label": "crossover"},
        "decay-granularity": {"kind": "bars", "x": "label", "xlabel": "point", "ylabel": TIME,
                              "series": {"one decay per head": "scalar_ms",
                                         "one decay per channel": "per_channel_ms"}},
        "reduction-determinism": {"kind": "bars", "x": "elements", "xlabel": "elements",
                                  "ylabel": "distinct results",
                                  "series": {"atomic": "atomic_distinct",
                                             "fixed order": "ordered_distinct"}},
        "determinism-overhead": {"kind": "lines", "x": "elements", "xlabel": "elements",
                                 "ylabel": TIME,
                                 "series": {"atomic": "atomic_ms", "fixed order": "ordered_ms"},
                                 "logx": True, "logy": True},
        "int8-native-vs-emulated": {"kind": "bars", "x": "size", "xlabel": "M = N = K",
                                    "ylabel": "TOPS",
                                    "series": {"native Triton": "native_triton_tops",
                                               "emulated": "emulated_triton_tops",
                                               "native cuBLASLt": "native_torch_tops"}},
        "kernel-vs-pytorch": {"kind": "bars", "x": "seq_len", "xlabel": "sequence length",
                              "ylabel": TIME,
                              "series": {"fastest plain PyTorch": "pytorch_ms",
                                         "chunked kernel": "kernel_ms"}, "logy": True},
        "lowrank-vs-dense": {"kind": "lines", "x": "rank", "xlabel": "rank r",
                             "ylabel": "speedup over dense",
                             "series": {"measured speedup": "speedup", "FLOP ratio": "flop_ratio"},
                             "logx": True, "logy": True, "hline": 1.0},
        "ssd-matmul-share": {"kind": "stacked", "x": "state_dim", "xlabel": "state size N",
                             "ylabel": TIME, "series": {n: f"{n}_ms" for n in
                                                        ("chunk_state", "state_passing",
                                                         "chunk_scan")}},
        "roofline-efficiency": {"kind": "category", "xlabel": "kernel", "ylabel": "fraction",
                                "categories": {"fraction of roofline":
                                               data.get("roofline_fraction", {}),
                                               "FLOP/s / bf16 peak":
                                               data.get("flop_efficiency", {})},
                                "logy": True},
        "gemm-ruggedness": {"kind": "lines", "x": "size", "xlabel": "M = N = K",
                            "ylabel": "TFLOP/s",
                            "series": {"cuBLAS": "cublas_tflops", "Triton": "triton_tflops"},
                            "markers": True},
        "scan-vs-mlp": {"kind": "bars", "x": "state_dim", "xlabel": "state size N",
                        "ylabel": "forward time (ms)",
                        "series": {"Mamba-1 layer (proj + scan)": "mamba_ms", "MLP 4d": "mlp_ms"}},
        "scan-vs-matmul-schedule": {"kind": "lines", "x": "state_dim",
                                    "xlabel": "state size N (at the claim's length)",
                                    "ylabel": TIME, "filter": {"seq_len": first.get("seq_len")},
                                    "series": {"scan": "scan_ms", "chunked": "chunked_ms"},
                                    "logx": True},
        "ssd-vs-attention": {"kind": "lines", "x": "seq_len", "xlabel": SEQ, "ylabel": TIME,
                             "series": {"FlashAttention-2 (SDPA flash)": "attention_ms",
                                        "SSD chunked": "ssd_ms"},
                             "logx": True, "logy": True, "vline": cross,
                             "vline_label": "crossover"},
        "ssd-vs-scan": {"kind": "lines", "x": "state_dim", "xlabel": "state size N",
                        "ylabel": TIME, "filter": {"seq_len": first.get("seq_len")},
                        "series": {"Mamba-1 selective scan": "scan_ms", "SSD chunked": "ssd_ms"},
                        "logx": True},
    }
    return specs.get(ev.experiment)


def spec_of(ev: EvidenceRecord) -> dict[str, Any] | None:
    """The record's stored plot description, else the legacy one of its experiment."""
    if not ev.statistics.get("plot") and _partition_rows(ev):
        # D2's bundled simulation stored no picture before it had one (partition_sim.PLOT)
        return partition_sim.PLOT
    if not ev.statistics.get("plot") and _serving(ev):
        return serving_picture.plot_spec(ev.statistics.get("data") or {}, ev.sweep)
    return ev.statistics.get("plot") or _legacy(ev)


def _serving(ev: EvidenceRecord) -> bool:
    """Evidence of an experiment whose hook is the serving one (serving-samba-prompt, ...)."""
    return catalogue.experiment_exists(ev.experiment) and \
        catalogue.get(ev.experiment).module == "serving"


def _partition_rows(ev: EvidenceRecord) -> bool:
    return ev.experiment == "reduction-partition-simulation" and bool(ev.sweep) and all(
        r.get("row") == "partition" for r in ev.sweep)


def rows_of(ev: EvidenceRecord) -> list[dict[str, Any]]:
    """The sweep rows the picture reads (D2's gain the `pattern` number its picture needs, the
    serving rows their bar `label`, which a run now writes into them)."""
    if _partition_rows(ev):
        return partition_sim.with_patterns(ev.sweep)
    if _serving(ev):
        return serving_picture.labelled(ev.sweep, ev.statistics.get("data") or {})
    return ev.sweep


def replot(paths: list[Path], out: Path) -> list[Path]:
    """Draw every given evidence record that has a picture into `out`; the files written."""
    kb, findings = load_files(paths)
    if findings:
        raise SystemExit("\n".join(f"{f.file}: {f.message}" for f in findings))
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for ev in sorted(kb.evidence.values(), key=lambda e: e.id):
        spec = spec_of(ev)
        if spec is not None and ev.sweep:
            path = render(spec, rows_of(ev), out / f"{ev.id}.png", ClaimView.of(ev))
            if path is None:
                raise SystemExit(f"matplotlib is not installed: {install_hint('plot')}")
            written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evidence", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/flopkb-plots"))
    args = parser.parse_args()
    paths = args.evidence or sorted((ROOT / "records" / "evidence").glob("ev-*.yaml"))
    for path in replot(paths, args.out):
        print(path)


if __name__ == "__main__":
    main()
