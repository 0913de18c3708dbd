"""The serving verdict, from the stored measurement only (`flopkb validate` re-derives it):

1. the claim's reading (model / baseline tokens/s, composed from each layer's fastest correct
   implementation) against the magnitude;
2. refused as implausible (an error, not a verdict) when that ratio is above the same reading
   composed from the layers' floors (the roofline ratio) x ROOFLINE_SLACK: a composition cannot
   beat the ratio its own floors allow by more than the floors' error;
3. a layer of the reading whose fastest implementation reaches less than the declared
   `floor_fraction` of its floor while a declared implementation of it was not timed (a peer
   absent, a failed build) does not judge the claim: inconclusive, naming the layer and why;
4. implementation sensitivity: the verdict of the same reading composed from each layer's
   default implementation, stated beside the verdict when it differs (confirmed vs refuted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment

ROOFLINE_SLACK = 1.1
# the stacked-model check holds the composition to this, on `stacked_like_for_like`
STACK_TOLERANCE = 0.10


def reading_rows(m: Measurement, r: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep rows the reading composed: both sides' prefill rows and decode rows at the
    side's batch of this reading."""
    batch = {"model": r["model_batch"], "baseline": r["baseline_batch"]}
    phase = m.data["setup"].get("phase")
    def used(row: dict[str, Any]) -> bool:
        if row.get("phase") == "prefill":
            return phase != "decode"
        return phase != "prefill" and row.get("batch") == batch.get(row.get("side"))

    return [row for row in m.sweep if used(row)]


def _where(row: dict[str, Any]) -> str:
    at = f" B={row['batch']}" if row.get("batch") else ""
    return f"{row['side']} {row['layer_type']} {row['phase']}{at}"


def below_floor(m: Measurement, r: dict[str, Any], fraction: float | None
                ) -> tuple[list[str], list[str]]:
    """(layers that block the verdict, layers below the fraction with no faster one known)."""
    if fraction is None:
        return [], []
    blocking, known = [], []
    for row in reading_rows(m, r):
        got = row.get("floor_fraction")
        if got is None or got >= fraction:
            continue
        text = (f"{_where(row)} at {got:.2f} of its floor ({row['implementation']}, "
                f"{row['ms']:.4g} ms vs {row['floor_ms']:.4g} ms)")
        skipped = row.get("skipped") or {}
        if skipped:
            why = "; ".join(f"{n}: {w}" for n, w in sorted(skipped.items()))
            blocking.append(f"{text}, below floor_fraction {fraction:g} while {why}")
        else:
            known.append(text)
    return blocking, known


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Experiment) -> Judgement:
    readings = m.data["readings"]
    name = m.data["claim_reading"]
    if name not in readings:
        raise ExperimentError(f"the measurement has no {name!r} reading")
    r = readings[name]
    ratio = Interval.from_dict(r["ratio"])
    roof = (m.data.get("roofline") or {}).get(name)
    if roof is not None and ratio.value > ROOFLINE_SLACK * roof:  # type: ignore[operator]
        raise ExperimentError(
            f"implausible: the composed {name} ratio {ratio.value:.3g}x is above the roofline "
            f"ratio {roof:.3g}x (the same reading composed from the layers' floors) x "
            f"{ROOFLINE_SLACK:g} = {ROOFLINE_SLACK * roof:.3g}x; refused")
    others = "; ".join(f"{o['name']}: {o['ratio']['value']:.3g}x ({o['what']})"
                       for n, o in readings.items() if n != name)
    what = f"{name} reading, model / baseline {r['what']}" + (f" [also {others}]" if others
                                                               else "")
    if cond.get("reading_why"):
        what += f"; judged: {cond['reading_why']}"
    qualitative = declaration.qualitative_criterion
    j = judge_ratio(ratio, mag, what=what, qualitative=qualitative)
    notes: list[str] = []
    if roof is not None:
        notes.append(f"roofline ratio {roof:.3g}x")
    fraction = cond.get("floor_fraction")
    blocking, known = below_floor(m, r, fraction)
    if known:
        notes.append("below floor_fraction with no faster implementation known: "
                     + "; ".join(known))
    cached = [_where(row) for row in reading_rows(m, r) if row.get("faster_than_floor")]
    if cached:
        notes.append("faster than their HBM floor (weights served from L2 between calls, "
                     "which a whole model would not get): " + ", ".join(cached))
    notes.extend(_stacked_notes(m.data.get("stacked") or {}))
    default = (m.data.get("default_readings") or {}).get(name)
    if default is not None and j.verdict in ("confirmed", "refuted"):
        d = judge_ratio(Interval.from_dict(default), mag, what=what, qualitative=qualitative)
        if {d.verdict, j.verdict} == {"confirmed", "refuted"}:
            notes.append(f"implementation-sensitive: every layer at its default implementation "
                         f"reads {default['value']:.3g}x, {d.verdict}")
    if blocking and j.verdict != "error":
        j = Judgement(j.measured, j.unit, j.what, "inconclusive", j.criterion,
                      reason=f"{j.verdict} by the ratio, not judged: " + "; ".join(blocking))
    if notes:
        j.reason = "; ".join(x for x in (j.reason, *notes) if x)
    return j


def stacked_like_for_like(st: dict[str, Any]) -> float:
    """Stacked / (composed + the stack's norms and residual adds, `glue_ms`): the composed sum
    leaves the glue out, the stack runs it. The bare ratio where the glue was not timed."""
    glue = st.get("glue_ms")
    if glue is None or st["composed_ms"] + glue <= 0:
        return st["ratio"]
    return st["stacked_ms"] / (st["composed_ms"] + glue)


def _stacked_notes(stacked: dict[str, Any]) -> list[str]:
    """The stacked-model check per side: stacked / composed and the like-for-like ratio, which
    the check holds to STACK_TOLERANCE."""
    notes = []
    for side, st in stacked.items():
        if not st or st.get("ratio") is None:
            continue
        glue, like = st.get("glue_ms"), stacked_like_for_like(st)
        off = (", outside the 10% it is checked to" if abs(like - 1) > STACK_TOLERANCE
               else "")
        with_glue = (f"; {like:.3g}x counting the stack's norms and residual adds, "
                     f"{glue:.3g} ms, which the composed sum leaves out" if glue is not None
                     else "")
        notes.append(f"{side} stacked {'+'.join(st['kinds'])}: {st['stacked_ms']:.4g} ms "
                     f"end to end vs {st['composed_ms']:.4g} ms composed "
                     f"({st['ratio']:.3g}x{with_glue}{off})")
    return notes
