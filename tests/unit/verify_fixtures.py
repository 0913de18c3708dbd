"""A small KB whose claim rows link every bundled experiment at tiny sizes (CPU-runnable)."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from flopkb.evidence import catalogue
from flopkb.evidence.store import _NoAliasDumper
from flopkb.paths import bundled_root

# Row id, experiment, magnitude, conditions (tiny: the Triton interpreter runs them on the CPU).
SSD = {"tokens": 64, "seq_len": 32, "heads": 2, "head_dim": 16, "state_dim": 16, "chunk_size": 16}
FORMS = {"batch": 1, "seq_len": 19, "heads": 2, "head_dim": 8, "chunk_size": 8}
SCAN = {"batch": 1, "dim": 8, "state_dim": 4, "heads": 2, "head_dim": 4, "min_len": 16,
        "max_len": 64}
ROWS = [
    ("schedule", "scan-vs-matmul-schedule", "qualitative", SSD),
    ("ssd-scan", "ssd-vs-scan", "2-8x", {**SSD, "hardware": "A100 80GB PCIe", "pass": "forward"}),
    ("crossover", "ssd-vs-attention", "crossover at 2K", {k: SSD[k] for k in
                                                        ("tokens", "heads", "head_dim", "state_dim",
                                                         "chunk_size")}),
    ("ratio-16k", "ssd-vs-attention", "6x at 64", {k: SSD[k] for k in
                                                   ("tokens", "heads", "head_dim", "state_dim",
                                                    "chunk_size")}),
    ("mlp", "scan-vs-mlp", "qualitative", {"d_model": 16, "state_dim": 8, "tokens": 64,
                                           "seq_len": 32}),
    ("decay", "decay-granularity", "qualitative", SSD),
    ("roofline", "roofline-efficiency", "qualitative", {"d_model": 8, "state_dim": 8,
                                                        "tokens": 64}),
    ("share", "ssd-matmul-share", "qualitative", SSD),
    ("memory", "ssd-head-dim-memory", "P=16", {"width": 32, "head_dim": 16, "base_head_dim": 8,
                                               "state_dim": 8, "tokens": 64, "seq_len": 32,
                                               "chunk_size": 16}),
    ("quadratic", "chunked-vs-quadratic", "qualitative", {k: SSD[k] for k in
                                                          ("tokens", "heads", "head_dim",
                                                           "state_dim", "chunk_size")}),
    ("chunk", "chunk-size-sweep", "Q=64", {**SSD, "seq_len": 64, "tokens": 64}),
    ("pytorch", "kernel-vs-pytorch", "qualitative", {"batch": 1, "heads": 2, "head_dim": 16,
                                                     "state_dim": 16, "chunk_size": 16}),
    ("rugged", "gemm-ruggedness", "qualitative", {"size": 48}),
    ("lowrank", "lowrank-vs-dense", "qualitative", {"tokens": 64, "size": 32}),
    ("int8", "int8-native-vs-emulated", "qualitative", {"size": 32}),
    ("determinism", "reduction-determinism", "qualitative", {"elements": 4096, "repeats": 5}),
    ("overhead", "determinism-overhead", "qualitative", {"elements": 4096}),
    ("overhead-figure", "determinism-overhead", "20-30%", {"elements": 4096}),
    # the Mamba-1 scan benchmark, the FA2 non-matmul cost and the prefill trend at toy sizes
    ("scan-crossover", "scan-benchmark", "crossover at 2K", SCAN),
    ("scan-pytorch", "scan-benchmark", "up to 20-40x", SCAN),
    ("non-matmul", "non-matmul-cost", "16x", {"size": 32, "elements": 1024, "iters": 8}),
    ("prefill", "prefill-trend", "qualitative", {"d_model": 4, "state_dim": 4, "tokens": 64}),
    # grids of 0.02 blocks per SM: 8..14 shares of 128-element tiles, few enough for the interpreter
    ("partition", "reduction-partition-simulation", "qualitative",
     {"elements": 8192, "repeats": 1, "seeds": 1, "tile": 128, "blocks_per_sm": 0.02}),
    # two forms of one recurrence (equivalence), and the SIMT shares of SSD and attention
    ("kda", "kda-vs-dplr", "qualitative", FORMS),
    ("lightning", "lightning-vs-linear-attention", "qualitative", FORMS),
    ("hgrn2", "hgrn2-scan-vs-chunked", "qualitative", FORMS),
    ("simt", "ssd-vs-softmax-simt-share", "qualitative", SSD),
]


def write_kb(root: Path) -> Path:
    """A KB root with the bundled accelerators and quantities and one class linking every row."""
    for folder in ("accelerators", "quantities"):
        shutil.copytree(bundled_root() / "records" / folder, root / "records" / folder)
    (root / "records" / "evidence").mkdir(parents=True)
    claims = " ".join(f"Claim {rid} holds." for rid, *_ in ROWS)
    prose = f"A test class. {claims} 2-8x 2K 6x 64 P=16 20-30% up to 20-40x 16x"
    rows = [
        {"id": rid, "quantity": "bf16_tensor_flops", "effect": f"Claim {rid} holds.",
         "magnitude": mag, "basis": "unverified", "conditions": cond,
         "verify": {"experiment": exp}}
        for rid, exp, mag, cond in ROWS
    ]
    record = {
        "schema_version": 2, "id": "test-class", "kind": "operator", "title": "Test class",
        "prose": prose, "affected_by_hardware": ["h200-sxm"],
        "flop": {"hardware_parameters": rows},
        "history": [{"date": "2026-11-30", "by": "tests", "note": "fixture"}],
    }
    (root / "records" / "classes").mkdir(parents=True)
    (root / "records" / "classes" / "test-class.yaml").write_text(
        yaml.dump(record, Dumper=_NoAliasDumper, sort_keys=False)
    )
    _about_test_class(root)
    return root


def _about_test_class(root: Path) -> None:
    """The bundled declarations, redeclared in the KB with `test-class` among their subjects:
    links are typed (FKB528), and this one class links every experiment."""
    (root / "experiments").mkdir()
    for path in sorted((bundled_root() / "experiments").glob("*.yaml")):
        if path.stem.startswith("serving-"):
            continue  # they need architecture records; see all_experiments
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        data["subjects"] = [*data.get("subjects", []), "test-class"]
        (root / "experiments" / path.name).write_text(yaml.safe_dump(data, sort_keys=False))


def linked_experiments() -> set[str]:
    return {exp for _, exp, _, _ in ROWS}


def all_experiments() -> set[str]:
    # the serving experiments read architecture records, which this KB does not carry; their
    # own tests drive them with the bundled records (tests/unit/verify/test_serving.py)
    serving = {n for n in catalogue.EXPERIMENTS if n.startswith("serving-")}
    return set(catalogue.EXPERIMENTS) - {"calibration"} - serving


# (ratio, p10 corner, p90 corner) that a ratio experiment's judge reads as each verdict
_RATIOS = {
    "qualitative": {"confirmed": (2.0, 1.9, 2.1), "refuted": (0.5, 0.4, 0.6),
                    "inconclusive": (1.0, 0.9, 1.1)},
    "2-8x": {"confirmed": (4.0, 3.5, 4.5), "refuted": (20.0, 19.0, 21.0),
             "inconclusive": (8.5, 7.0, 10.0)},
}


def stored_ratio(verdict: str, magnitude: str = "qualitative") -> dict:
    """The fields a schema 3 evidence record of a ratio experiment (int8, ssd-vs-scan, ...) keeps
    for `verdict` to re-derive: `statistics.data.primary` and the matching `measured`; {} for a
    verdict that measured nothing."""
    if verdict not in _RATIOS[magnitude]:
        return {}
    value, low, high = _RATIOS[magnitude][verdict]
    row = {"seq_len": 64, "state_dim": 8, "size": 32, "ratio": value, "ratio_low": low,
           "ratio_high": high}
    return {"statistics": {"data": {"primary": row}}, "sweep": [dict(row)],
            "measured": {"value": value, "low": low, "high": high, "unit": "x"}}
