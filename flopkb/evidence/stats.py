"""The verdict rule: measured intervals from timing spread, claimed intervals from magnitudes.

Torch-free, so the rule is unit-tested with synthetic numbers. docs/verify.md states the same rule
and the tolerances in prose; change both together.

- A measured quantity is an `Interval` (value, low, high). A ratio of two timings takes its value
  from the medians and its interval from the p10/p90 band of both (the conservative corners:
  low = p10_a / p90_b, high = p90_a / p10_b).
- A claimed magnitude becomes an interval widened by a tolerance (`claimed_interval`).
- `decide`: confirmed when the measured interval lies inside the widened claimed interval;
  refuted when the two are disjoint; inconclusive when they overlap only in part (the noise, or the
  claim's edge, leaves it open).
- Absolute claims (`740 TFLOP/s`, `1.7 ms`, `from 12 ms to 4 ms`) are judged in base units against
  `absolute_interval`, the claimed interval with the same tolerances (the half unit of the last
  quoted digit scaled by the written unit; `from A to B` is judged at B, exactly); `judge_absolute`
  converts a measurement in any unit of the claim's dimension first.
- Qualitative claims are read through a threshold (`decide_above`): "faster" means a time ratio
  above 1. Confirmed when the whole interval lies above threshold * (1 + QUALITATIVE_MARGIN);
  refuted when it lies wholly below the threshold; inconclusive in between.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flopkb.grammar import units

if TYPE_CHECKING:
    from flopkb.grammar.magnitude import Magnitude

# Relative widening of a claimed interval, by how the figure was stated. Papers round their
# figures and read them off plots on other hardware generations; 10% is the measurement
# tolerance on top of the rounding of the last quoted digit; "~" figures get 25%.
TOLERANCE: dict[str, float] = {"exact": 0.10, "range": 0.10, "upper": 0.10, "lower": 0.10,
                               "approx": 0.25}
# A qualitative "A is faster than B" needs A's advantage to exceed 5% beyond the noise band.
QUALITATIVE_MARGIN = 0.05
# A quoted crossover length ("crossover at 2K") is confirmed within half an octave either side.
CROSSOVER_FACTOR = math.sqrt(2.0)

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"


@dataclass(frozen=True)
class Interval:
    """A measured value and its uncertainty band; None bounds are open (unbounded)."""

    value: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Interval:
        """An Interval back from its `as_dict()` form (evidence data, re-derivation)."""
        return cls(d["value"], d["low"], d["high"])


def _lo(x: float | None) -> float:
    return -math.inf if x is None else x


def _hi(x: float | None) -> float:
    return math.inf if x is None else x


def ratio_interval(num: Any, den: Any) -> Interval:
    """t_num / t_den from two `Timing`s (median_ms, p10_ms, p90_ms), conservative corners."""
    return Interval(
        num.median_ms / den.median_ms, num.p10_ms / den.p90_ms, num.p90_ms / den.p10_ms
    )


def sum_interval(parts: Sequence[Any]) -> Interval:
    """Sum of several timings (ms): medians add; the band adds the p10s and the p90s."""
    return Interval(
        sum(p.median_ms for p in parts), sum(p.p10_ms for p in parts), sum(p.p90_ms for p in parts)
    )


def divide(num: Interval, den: Interval) -> Interval:
    """num / den for positive intervals, conservative corners."""
    return Interval(
        None if num.value is None or den.value is None else num.value / den.value,
        None if num.low is None or den.high is None else num.low / den.high,
        None if num.high is None or den.low is None else num.high / den.low,
    )


def _half_unit(figure: str) -> float:
    """Half a unit of the last quoted digit: '6' -> 0.5, '3.73' -> 0.005."""
    decimals = len(figure.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals)


def claimed_interval(
    low: float | None,
    high: float | None,
    bound: str,
    figures: Sequence[str] = (),
    scale: float = 1.0,
) -> tuple[float | None, float | None]:
    """The claimed interval widened by the documented tolerance.

    exact/approx: the figure +- half a unit of its last digit, then x/÷ (1 + tol);
    range: low / (1 + tol) .. high * (1 + tol); upper: .. high * (1 + tol);
    lower: low / (1 + tol) ..
    `scale` turns the half unit, counted in the unit the figure was written in, into the unit
    of `low` / `high` (an absolute magnitude's base unit: 1e12 for a figure in TFLOP/s).
    """
    tol = TOLERANCE.get(bound, TOLERANCE["exact"])
    if bound in {"exact", "approx"} and low is not None and high is not None:
        half = _half_unit(figures[0]) * scale if figures else 0.0
        return (low - half) / (1 + tol), (high + half) * (1 + tol)
    lo = None if low is None else low / (1 + tol)
    hi = None if high is None else high * (1 + tol)
    return lo, hi


def best_case(magnitude: Any) -> bool:
    """Whether a ratio magnitude is an `up to R` figure: the best case the claim says is reached
    (not a ceiling such as `<= R`, which the parser also reads as an upper bound)."""
    return (getattr(magnitude, "kind", None) == "ratio" and magnitude.bound == "upper"
            and str(magnitude.text).strip().lower().startswith("up to")
            and bool(magnitude.figures))


def claimed_ratio_interval(magnitude: Any) -> tuple[float | None, float | None]:
    """`claimed_interval` of a ratio magnitude. `up to R` (and `up to R1-R2`) claims its best case
    reaches R: judged as the figure it writes (`up to 6x` as `6x`, `up to 20-40x` as `20-40x`),
    so a speed-up far below the figure (or a slow-down) does not confirm it; `<= R` stays a
    ceiling."""
    if best_case(magnitude):
        try:
            lowest = min(float(f.replace(",", "")) for f in magnitude.figures)
        except ValueError:
            lowest = None
        if lowest is not None:
            # as the figure written: `up to 6x` as `6x`, `up to 20-40x` as `20-40x`
            bound = "range" if len(magnitude.figures) > 1 else "exact"
            return claimed_interval(lowest, magnitude.high, bound, magnitude.figures)
    return claimed_interval(magnitude.low, magnitude.high, magnitude.bound, magnitude.figures)


def decide(measured: Interval, lo: float | None, hi: float | None) -> str:
    """Confirmed inside [lo, hi]; refuted when disjoint; inconclusive when straddling."""
    m_lo, m_hi = _lo(measured.low), _hi(measured.high)
    if math.isnan(m_lo) or math.isnan(m_hi):
        return INCONCLUSIVE
    c_lo, c_hi = _lo(lo), _hi(hi)
    if m_lo >= c_lo and m_hi <= c_hi:
        return CONFIRMED
    if m_lo > c_hi or m_hi < c_lo:
        return REFUTED
    return INCONCLUSIVE


def absolute_interval(magnitude: Magnitude) -> tuple[float | None, float | None]:
    """The claimed interval of an absolute claim (kind "absolute" or "change") in base units,
    widened by the tolerance: the half unit of the last quoted digit, scaled by the written unit
    ("740" TFLOP/s: 0.5e12 FLOP/s); `from 12 ms to 4 ms` claims 4 ms, with that figure's rounding.
    ValueError for a magnitude that is not absolute: a wrong link, never a verdict."""
    if magnitude.kind not in {"absolute", "change"} or magnitude.unit is None:
        raise ValueError(f"expected an absolute magnitude, got kind {magnitude.kind!r}")
    figures = magnitude.figures[-1:] if magnitude.kind == "change" else magnitude.figures
    scale = units.unit(magnitude.unit).to_base(1.0)
    return claimed_interval(magnitude.low, magnitude.high, magnitude.bound, figures, scale)


def judge_absolute(measured: Interval, measured_unit: str, magnitude: Magnitude) -> str:
    """An absolute claim (kind "absolute" or "change") against a measured interval in
    `measured_unit`: both in base units, then `decide` on `absolute_interval`.

    Raises `flopkb.grammar.units.UnitError` when the measured unit is unknown or of another
    dimension than the claim (a throughput in TB/s cannot judge "740 TFLOP/s"), and ValueError for a
    magnitude that is not absolute: a wrong link, never a verdict.
    """
    lo, hi = absolute_interval(magnitude)
    unit = units.unit(measured_unit)
    if not units.compatible(unit.dimension, magnitude.dimension):
        raise units.UnitError(
            f"a measurement in {measured_unit!r} ({unit.dimension}) cannot judge "
            f"{magnitude.text!r} ({magnitude.dimension})"
        )

    def base(x: float | None) -> float | None:
        return None if x is None else unit.to_base(x)

    in_base = Interval(base(measured.value), base(measured.low), base(measured.high))
    return decide(in_base, lo, hi)


def decide_above(measured: Interval, threshold: float, margin: float = QUALITATIVE_MARGIN) -> str:
    """Qualitative 'above threshold': confirmed above threshold*(1+margin), refuted below it."""
    if _lo(measured.low) > threshold * (1 + margin):
        return CONFIRMED
    if _hi(measured.high) < threshold:
        return REFUTED
    return INCONCLUSIVE


def decide_below(measured: Interval, threshold: float, margin: float = QUALITATIVE_MARGIN) -> str:
    """Qualitative 'at most threshold': confirmed when the whole interval lies at or under
    threshold * (1 + margin), refuted when it lies wholly above that band."""
    band = threshold * (1 + margin)
    if _hi(measured.high) <= band:
        return CONFIRMED
    if _lo(measured.low) > band:
        return REFUTED
    return INCONCLUSIVE


def decide_crossover(measured: Interval, claimed: float, factor: float = CROSSOVER_FACTOR) -> str:
    """A crossover length against a claimed one, within x/÷ `factor`."""
    return decide(measured, claimed / factor, claimed * factor)


def _crossing(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, str]:
    """Where a rising curve y(x) crosses 1 for good: interpolated in log-log between the last
    point below 1 and the first point from which y stays >= 1.

    Returns (x*, "inside"), (None, "below") when y >= 1 at every x (crossover <= x[0]), or
    (None, "above") when y < 1 at the last x (crossover beyond x[-1]).
    """
    start = len(ys)
    for i in range(len(ys) - 1, -1, -1):
        if ys[i] >= 1.0:
            start = i
        else:
            break
    if start == len(ys):
        return None, "above"
    if start == 0:
        return None, "below"
    x0, x1 = math.log(xs[start - 1]), math.log(xs[start])
    y0, y1 = math.log(ys[start - 1]), math.log(ys[start])
    frac = 0.0 if y1 == y0 else (0.0 - y0) / (y1 - y0)
    return math.exp(x0 + frac * (x1 - x0)), "inside"


def crossover(xs: Sequence[float], ratios: Sequence[Interval]) -> Interval:
    """Crossover of a ratio that rises with x (e.g. t_attention / t_ssd over sequence length).

    The value comes from the medians; the interval from the band's edges: the high curve crosses
    first (lower bound), the low curve last (upper bound). A crossing outside the swept range is an
    open bound: below the range -> (None, None, x[0]); beyond it -> (None, x[-1], None).
    """
    if len(xs) != len(ratios) or not xs:
        raise ValueError(f"expected one ratio per x, got {len(xs)} x and {len(ratios)} ratios")
    mid, _ = _crossing(xs, [r.value for r in ratios])
    early, early_kind = _crossing(xs, [r.high for r in ratios])
    late, late_kind = _crossing(xs, [r.low for r in ratios])
    # The high curve crosses first: its crossing bounds the crossover from below, and vice versa.
    low = {"below": None, "above": xs[-1]}.get(early_kind, early)
    high = {"below": xs[0], "above": None}.get(late_kind, late)
    return Interval(mid, low, high)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Population standard deviation over mean."""
    if not values:
        raise ValueError("expected at least one value, got none")
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / len(values)
    return math.sqrt(var) / mean if mean else math.inf


def tolerances() -> dict[str, float]:
    """The tolerances a verdict is decided with, as evidence records them (schema 4)."""
    return {**{f"tolerance_{k}": v for k, v in TOLERANCE.items()},
            "qualitative_margin": QUALITATIVE_MARGIN, "crossover_factor": CROSSOVER_FACTOR}


def ceiling_verdict(measured_tflops: float, measured_gbps: float, datasheet_tflops: float | None,
                    datasheet_tbps: float | None) -> tuple[str, str | None]:
    """A calibration's verdict: measured ceilings against the datasheet (TFLOP/s, TB/s). Above it
    means a broken timer (error); far under it, inconclusive."""
    if datasheet_tflops is None or datasheet_tbps is None:
        return INCONCLUSIVE, "no datasheet figures to compare the ceilings with"
    f_ratio = measured_tflops / datasheet_tflops
    b_ratio = measured_gbps / (datasheet_tbps * 1000)
    note = f"measured / datasheet: bf16 {f_ratio:.2f}, bandwidth {b_ratio:.2f}"
    if f_ratio > 1.05 or b_ratio > 1.05:
        return "error", f"ceiling above the datasheet ({note}): broken timer"
    if f_ratio <= 0.5 or b_ratio <= 0.5:
        return INCONCLUSIVE, f"ceiling far under the datasheet ({note})"
    return CONFIRMED, note
