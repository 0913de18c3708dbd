"""D2 on one GPU: run_to_run's combining order follows the SM count. A SIMULATION of other parts.

CUB's run_to_run reduce cuts the input into `min(tiles, occupancy * SMs * 5)` contiguous even
shares (GridEvenShare) and folds their partials in a fixed order: bitwise repeatable on one part,
but another part's SM count cuts the same input elsewhere. Two GPU models are needed to measure
that; on one GPU the mechanism can be shown, and the evidence says `simulation: true`.

Side "reduction":
- `bundled`: our fixed-order sum with exactly the even-share partition each accelerator of the
  KB implies from its `sm_count` (kernels/reduction/partitioned.py); each partition repeated
  (bitwise stable), the partitions' bit patterns compared. Parts with equal SM counts (H100,
  H200) share a partition and agree.
- `cub`: CUB itself, whose API takes no partition count (its grid comes from the device's SM
  count; a custom tuning policy could change tiles, not the SM count). What the API allows:
  rotating the input moves values across CUB's fixed block boundaries as another SM count would
  move the boundaries across the values. run_to_run's bits over rotations are compared with
  gpu_to_gpu's (the Reproducible Floating-point Accumulator is independent of order by design).

What a simulation may conclude: that the mechanism exists (different partitions give different
bits; gpu_to_gpu does not move), i.e. `confirmed` or `inconclusive`, never `refuted` (equal bits
in a simulation say nothing about other parts' kernels). Its evidence never backs
`basis: measured` (the validator's rule 3 skips evidence with `simulation: true`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, point_row
from flopkb.evidence.stats import Interval
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# 64M fp32 = 16384 tiles of 4096: more tiles than any KB part's grid, so every SM count cuts.
DEFAULTS: dict[str, Any] = {"elements": 64 * 2**20, "repeats": 5, "seeds": 3,
                            "simulation": True, "tile": 4096, "blocks_per_sm": 8}
# Rotations of the input for the cub side (elements): none, one, and shifts that are not
# multiples of a tile.
ROTATIONS = (0, 1, 1000, 12345, 1 << 20 | 77)


def sm_counts(ctx: Context) -> dict[int, list[str]]:
    """SM count -> the KB's accelerators with it (their `sm_count` spec)."""
    kb = ctx.kb
    if kb is None:
        kb, _ = load_kb(ctx.kb_root or bundled_root())
    out: dict[int, list[str]] = {}
    for acc_id, acc in sorted(kb.accelerators.items()):
        spec = acc.specs.get("sm_count")
        if spec is not None and spec.value:
            out.setdefault(int(spec.value), []).append(acc_id)
    if len(out) < 2:
        raise ExperimentError("the KB lists fewer than two SM counts: nothing to compare")
    return dict(sorted(out.items()))


def partitions(part: Any, n: int, counts: dict[int, list[str]], tile: int,
               blocks_per_sm: float) -> dict[int, tuple[int, list[str]]]:
    """parts -> (SM count, accelerators) for CUB's grid on each SM count (equal grids merge);
    `part` is kernels/reduction/partitioned.py."""
    out: dict[int, tuple[int, list[str]]] = {}
    for sms, accs in counts.items():
        parts = part.grid_for(n, sms, tile=tile, blocks_per_sm=blocks_per_sm)
        if parts in out:
            out[parts][1].extend(accs)
        else:
            out[parts] = (sms, list(accs))
    return out


def cpu_check(ctx: Context) -> None:
    red_bench = ctx.load("reduction", "bench")
    part = ctx.load("reduction", "partitioned")
    x = red_bench.inputs(ctx, 40_000)
    for parts in (1, 7, 40):
        red_bench.check_sum(ctx, f"reduction.partitioned.partitioned_sum (parts={parts})",
                             part.partitioned_sum(x, parts, tile=512), x, 512)
    # the grids the KB's parts imply, at the default size
    sims = partitions(part, DEFAULTS["elements"], sm_counts(ctx), DEFAULTS["tile"],
                      DEFAULTS["blocks_per_sm"])
    ok = len(sims) >= 2
    ctx.checks.append({"kernel": "partition grids from the KB's sm_count", "ok": ok,
                       "grids": {str(p): accs for p, (_, accs) in sims.items()}})
    if not ok:
        raise ExperimentError("the KB's SM counts imply fewer than two partitions")
    red_bench.check_cub_plan(ctx)


def _bundled_rows(ctx: Context, cond: dict[str, Any], seeds: int) -> list[dict[str, Any]]:
    red_bench = ctx.load("reduction", "bench")
    part = ctx.load("reduction", "partitioned")
    n, repeats, tile = int(cond["elements"]), int(cond["repeats"]), int(cond["tile"])
    sims = partitions(part, n, sm_counts(ctx), tile, float(cond["blocks_per_sm"]))
    ctx.describe_impl("reduction", f"bundled partitioned_sum (even shares of {tile}-element "
                      "tiles, partials folded in index order) at the grids of the KB's SM counts")
    rows = []
    for seed in range(seeds):
        x = red_bench.inputs(ctx, n, seed=seed)
        for parts, (sms, accs) in sims.items():
            out = part.partitioned_sum(x, parts, tile=tile)
            red_bench.check_sum(ctx, f"partitioned_sum parts={parts} seed={seed}", out, x, tile)
            again = [part.partitioned_sum(x, parts, tile=tile) for _ in range(repeats)]
            rows.append(point_row(row="partition", seed=seed, sm_count=sms,
                                  accelerators=", ".join(accs), parts=parts,
                                  bits=red_bench.bits_hex(out),
                                  repeat_distinct=red_bench.distinct([out, *again])))
    return with_patterns(rows)


# The picture of the bundled simulation: per input, which bit pattern each SM count's partition
# gave (1 = the first pattern seen): a flat line is the same sum on every part.
PLOT = {"kind": "lines", "x": "sm_count", "xlabel": "SM count whose partition is simulated",
        "ylabel": "bit pattern of the sum (1 = first seen)", "group": "seed", "y": "pattern"}


def with_patterns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with `pattern`: per seed, the 1-based order in which each row's `bits` first
    appeared (bit patterns are hex strings; the picture needs numbers)."""
    seen: dict[Any, list[str]] = {}
    out = []
    for row in rows:
        patterns = seen.setdefault(row.get("seed"), [])
        if row.get("bits") not in patterns:
            patterns.append(row.get("bits"))
        out.append({**row, "pattern": patterns.index(row.get("bits")) + 1})
    return out


def _cub_rows(ctx: Context, cond: dict[str, Any], seeds: int) -> list[dict[str, Any]]:
    import torch

    red_bench = ctx.load("reduction", "bench")
    lib = red_bench.cub_levels(ctx)
    n, repeats = int(cond["elements"]), int(cond["repeats"])
    rows = []
    for seed in range(seeds):
        x = red_bench.inputs(ctx, n, seed=seed)
        for shift in ROTATIONS:
            y = torch.roll(x, shift % n) if shift % n else x
            row: dict[str, Any] = {"row": "rotation", "seed": seed, "shift": shift % n}
            for level in ("run_to_run", "gpu_to_gpu"):
                out = lib.sum(y, level)
                red_bench.check_sum(ctx, f"cub {level} shift={shift} seed={seed}", out, y,
                                     red_bench.CUB_TILE)
                again = [lib.sum(y, level) for _ in range(repeats)]
                row[f"{level}_bits"] = red_bench.bits_hex(out)
                row[f"{level}_repeat_distinct"] = red_bench.distinct([out, *again])
            rows.append(row)
            del y
    return rows


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    if cond.get("simulation") is not True:
        raise ExperimentError("reduction-partition-simulation is a simulation of other parts on "
                              "one GPU: conditions.simulation cannot be switched off")
    impl = ctx.impl("reduction")
    seeds = 1 if ctx.quick else int(cond["seeds"])
    if impl == "bundled":
        rows = _bundled_rows(ctx, cond, seeds)
    elif impl == "cub":
        rows = _cub_rows(ctx, cond, seeds)
    else:
        raise ValueError(f"no {impl!r} implementation of the reduction side")
    # the cub rows (rotations at two levels) have no picture of their own yet
    plot = PLOT if impl == "bundled" else None
    return Measurement({"impl": impl, "summary": summarize(rows)}, rows, dict(cond), plot)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per seed, how many distinct bit patterns the partitions (or rotations) gave, and the
    worst repeat count of any one of them."""
    seeds = sorted({r["seed"] for r in rows})
    if rows and rows[0]["row"] == "partition":
        return {"kind": "partition", "partitions": len({r["parts"] for r in rows}),
                "distinct_per_seed": [len({r["bits"] for r in rows if r["seed"] == s})
                                      for s in seeds],
                "repeat_max": max(r["repeat_distinct"] for r in rows)}
    return {"kind": "rotation", "rotations": len({r["shift"] for r in rows}),
            "run_to_run_per_seed": [len({r["run_to_run_bits"] for r in rows if r["seed"] == s})
                                    for s in seeds],
            "gpu_to_gpu_per_seed": [len({r["gpu_to_gpu_bits"] for r in rows if r["seed"] == s})
                                    for s in seeds],
            "repeat_max": max(max(r["run_to_run_repeat_distinct"],
                                  r["gpu_to_gpu_repeat_distinct"]) for r in rows)}


CRITERION = (
    "SIMULATION on one GPU (evidence conditions.simulation: true; never backs basis: measured). "
    "bundled: our fixed-order sum at the even-share grid each KB accelerator's sm_count implies; "
    "confirmed (the mechanism) when every partition repeats bitwise and, for some input, the "
    "partitions give more than one bit pattern; inconclusive when they all agree. cub: confirmed "
    "when run_to_run gives more than one bit pattern over input rotations while gpu_to_gpu gives "
    "one and both repeat; inconclusive otherwise. A simulation never refutes a statement about "
    "other hardware"
)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    s = m.data["summary"]
    if s["repeat_max"] > 1:
        return Judgement(Interval(None, None, None), "distinct results",
                         "a fixed-order configuration repeated", "error", CRITERION,
                         reason=f"a configuration meant to repeat gave {s['repeat_max']} "
                         "bit patterns on one input: the simulation is invalid")
    if s["kind"] == "partition":
        worst = max(s["distinct_per_seed"])
        verdict = "confirmed" if worst > 1 else "inconclusive"
        return Judgement(
            Interval(float(worst), float(min(s["distinct_per_seed"])), float(worst)),
            "distinct results",
            f"simulation: distinct bitwise sums over the {s['partitions']} partitions the KB's "
            f"SM counts imply, per input: {s['distinct_per_seed']} (each partition bitwise "
            "repeatable)", verdict, CRITERION)
    rr, g2g = s["run_to_run_per_seed"], s["gpu_to_gpu_per_seed"]
    verdict = "confirmed" if max(rr) > 1 and max(g2g) == 1 else "inconclusive"
    return Judgement(
        Interval(float(max(rr)), float(min(rr)), float(max(rr))), "distinct results",
        f"simulation: distinct bitwise CUB sums over {s['rotations']} rotations of the input, "
        f"per input: run_to_run {rr}, gpu_to_gpu {g2g}", verdict, CRITERION)
