"""The verdict rule on synthetic numbers, edges included."""

from __future__ import annotations

import math

import pytest

from flopkb.evidence import stats
from flopkb.evidence.stats import Interval, claimed_interval, judge_absolute
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.grammar.units import UnitError
from flopkb.verify.timing import summarize


class _T:
    def __init__(self, median: float, p10: float, p90: float) -> None:
        self.median_ms, self.p10_ms, self.p90_ms = median, p10, p90


def _claimed(text: str):
    m = parse_magnitude(text)
    return stats.claimed_interval(m.low, m.high, m.bound, m.figures)


def test_ratio_interval_takes_conservative_corners():
    r = stats.ratio_interval(_T(10, 9, 11), _T(2, 1.9, 2.1))
    assert r.value == pytest.approx(5.0)
    assert r.low == pytest.approx(9 / 2.1)
    assert r.high == pytest.approx(11 / 1.9)


def test_range_claim_widened_by_ten_percent():
    lo, hi = _claimed("2-8x")
    assert lo == pytest.approx(2 / 1.1) and hi == pytest.approx(8 * 1.1)


def test_exact_claim_adds_half_unit_of_last_digit():
    lo, hi = _claimed("6x at 16K")
    assert lo == pytest.approx(5.5 / 1.1) and hi == pytest.approx(6.5 * 1.1)
    lo, hi = _claimed("3.73x")
    assert lo == pytest.approx(3.725 / 1.1) and hi == pytest.approx(3.735 * 1.1)


def test_approx_claim_gets_wider_tolerance():
    lo, hi = _claimed("~20%")
    assert lo == pytest.approx(19.5 / 1.25) and hi == pytest.approx(20.5 * 1.25)


def test_open_bounds():
    assert _claimed("up to 3x") == (None, pytest.approx(3.3))
    lo, hi = _claimed("at least 2x")
    assert lo == pytest.approx(2 / 1.1) and hi is None


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (Interval(4.0, 3.5, 4.5), "confirmed"),
        (Interval(1.9, 1.85, 1.95), "confirmed"),  # inside thanks to the tolerance
        (Interval(1.2, 1.1, 1.3), "refuted"),
        (Interval(12.0, 10.0, 14.0), "refuted"),
        (Interval(1.8, 1.5, 2.2), "inconclusive"),  # straddles the widened low edge
        (Interval(5.0, 1.0, 20.0), "inconclusive"),  # noise wider than the claim
        (Interval(None, None, None), "inconclusive"),
        (Interval(math.nan, math.nan, math.nan), "inconclusive"),
    ],
)
def test_decide_against_a_range(measured, verdict):
    lo, hi = _claimed("2-8x")
    assert stats.decide(measured, lo, hi) == verdict


def test_decide_touching_edge_counts_as_inside():
    assert stats.decide(Interval(2, 2, 3), 2.0, 3.0) == "confirmed"


@pytest.mark.parametrize(
    ("measured", "verdict"),
    [
        (Interval(1.5, 1.2, 1.8), "confirmed"),
        (Interval(1.04, 1.03, 1.05), "inconclusive"),  # faster, but within the 5% margin
        (Interval(1.0, 0.95, 1.05), "inconclusive"),
        (Interval(0.8, 0.7, 0.9), "refuted"),
        (Interval(0.99, 0.98, 1.0), "inconclusive"),  # touches 1: not clearly below
    ],
)
def test_qualitative_above(measured, verdict):
    assert stats.decide_above(measured, 1.0) == verdict


def test_qualitative_below():
    assert stats.decide_below(Interval(1.02, 1.0, 1.08), 1.0, margin=0.10) == "confirmed"
    assert stats.decide_below(Interval(1.3, 1.2, 1.4), 1.0, margin=0.10) == "refuted"
    assert stats.decide_below(Interval(1.1, 1.05, 1.2), 1.0, margin=0.10) == "inconclusive"


def test_crossover_interpolates_in_log_log():
    xs = [512, 1024, 2048, 4096]
    ratios = [Interval(r, r * 0.95, r * 1.05) for r in (0.25, 0.5, 2.0, 4.0)]
    c = stats.crossover(xs, ratios)
    # log-linear between 1024 (0.5) and 2048 (2.0): halfway in log -> sqrt(1024 * 2048)
    assert c.value == pytest.approx(math.sqrt(1024 * 2048))
    assert c.low < c.value < c.high
    assert stats.decide_crossover(c, 1448) == "confirmed"
    assert stats.decide_crossover(c, 2048) == "inconclusive"  # low end under 2048 / sqrt 2
    assert stats.decide_crossover(c, 16384) == "refuted"


def test_crossover_outside_the_swept_range_is_an_open_bound():
    xs = [512, 1024]
    below = stats.crossover(xs, [Interval(2, 1.9, 2.1), Interval(3, 2.9, 3.1)])
    assert below.value is None and below.low is None and below.high == 512
    above = stats.crossover(xs, [Interval(0.2, 0.1, 0.3), Interval(0.5, 0.4, 0.6)])
    assert above.value is None and above.low == 1024 and above.high is None
    assert stats.decide_crossover(above, 256) == "refuted"


def test_crossover_takes_the_last_crossing_for_good():
    xs = [1, 2, 4, 8]
    c = stats.crossover(xs, [Interval(v, v, v) for v in (1.5, 0.5, 2.0, 3.0)])
    assert 2 < c.value < 4


def test_crossover_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="one ratio per x"):
        stats.crossover([1, 2], [Interval(1, 1, 1)])


def test_sum_and_divide_intervals():
    s = stats.sum_interval([_T(1, 0.9, 1.1), _T(2, 1.8, 2.2)])
    assert (s.value, s.low, s.high) == pytest.approx((3, 2.7, 3.3))
    d = stats.divide(s, Interval(1.5, 1.0, 3.0))
    assert (d.value, d.low, d.high) == pytest.approx((2, 0.9, 3.3))


def test_coefficient_of_variation():
    assert stats.coefficient_of_variation([1, 1, 1]) == 0
    assert stats.coefficient_of_variation([1, 3]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        stats.coefficient_of_variation([])


def test_summarize_order_statistics():
    t = summarize([5.0, 1.0, 2.0, 3.0, 4.0])
    assert (t.median_ms, t.min_ms, t.max_ms, t.reps) == (3.0, 1.0, 5.0, 5)
    assert t.p10_ms == pytest.approx(1.4) and t.p90_ms == pytest.approx(4.6)
    with pytest.raises(ValueError):
        summarize([])


# --- absolute claims: measured intervals in a compatible unit, judged in base units ---


def test_absolute_claim_confirmed_in_another_unit_of_its_dimension() -> None:
    mag = parse_magnitude("740 TFLOP/s")
    # 0.74 PFLOP/s measured as 0.72-0.76: inside [739.5/1.1, 740.5*1.1] TFLOP/s
    assert judge_absolute(Interval(0.74, 0.72, 0.76), "PFLOP/s", mag) == "confirmed"
    assert judge_absolute(Interval(740e3, 730e3, 750e3), "GFLOP/s", mag) == "confirmed"


def test_absolute_claim_refuted_and_inconclusive() -> None:
    mag = parse_magnitude("3.35 TB/s")
    # 2.0-2.4 TB/s lies wholly below 3.345 / 1.1 = 3.04 TB/s
    assert judge_absolute(Interval(2200, 2000, 2400), "GB/s", mag) == "refuted"
    # 2.9-3.2 TB/s straddles the lower edge 3.04
    assert judge_absolute(Interval(3.05, 2.9, 3.2), "TB/s", mag) == "inconclusive"


def test_absolute_tolerance_edges() -> None:
    mag = parse_magnitude("1.7 ms")
    lo, hi = 1.65e-3 / 1.1, 1.75e-3 * 1.1
    assert judge_absolute(Interval(None, lo * 1.001, hi * 0.999), "s", mag) == "confirmed"
    assert judge_absolute(Interval(None, hi * 1.001, hi * 1.1), "s", mag) == "refuted"
    assert judge_absolute(Interval(None, 1800, 1900), "us", mag) == "confirmed"


def test_absolute_bounds_and_change() -> None:
    assert judge_absolute(Interval(70, 60, 79), "GB", parse_magnitude("up to 80 GB")) == (
        "confirmed"
    )
    assert judge_absolute(Interval(95, 90, 99), "GB", parse_magnitude("up to 80 GB")) == "refuted"
    # "from 12 ms to 4 ms" is judged at 4 ms
    change = parse_magnitude("from 12 ms to 4 ms")
    assert judge_absolute(Interval(4.1, 4.0, 4.2), "ms", change) == "confirmed"
    assert judge_absolute(Interval(11.9, 11.5, 12.5), "ms", change) == "refuted"


def test_absolute_claim_needs_a_compatible_unit() -> None:
    with pytest.raises(UnitError, match="cannot judge"):
        judge_absolute(Interval(1, 1, 1), "TB/s", parse_magnitude("740 TFLOP/s"))
    with pytest.raises(UnitError, match="unknown unit"):
        judge_absolute(Interval(1, 1, 1), "parsecs", parse_magnitude("740 TFLOP/s"))
    with pytest.raises(ValueError, match="absolute"):
        judge_absolute(Interval(3, 3, 3), "s", parse_magnitude("3x"))


def test_claimed_interval_scales_the_half_unit() -> None:
    mag = parse_magnitude("1,979 TOPS")
    lo, hi = claimed_interval(mag.low, mag.high, mag.bound, mag.figures, scale=1e12)
    assert lo == pytest.approx(1978.5e12 / 1.1)
    assert hi == pytest.approx(1979.5e12 * 1.1)


@pytest.mark.parametrize(("text", "measured", "verdict"), [
    ("up to 6x", (0.5, 0.45, 0.55), "refuted"),    # a slow-down never confirms a speed-up claim
    ("up to 6x", (2.0, 1.9, 2.1), "refuted"),      # far below the best case the claim names
    ("up to 6x", (5.9, 5.6, 6.2), "confirmed"),
    ("up to 20-40x", (10.1, 5.9, 11.5), "refuted"),
    ("up to 20-40x", (25.0, 22.0, 30.0), "confirmed"),
    ("<= 2x", (0.5, 0.45, 0.55), "confirmed"),     # a ceiling stays a ceiling
])
def test_up_to_a_ratio_is_the_best_case_the_claim_names(text, measured, verdict) -> None:
    from flopkb.evidence.measurement import judge_ratio

    got = judge_ratio(Interval(*measured), parse_magnitude(text), what="t(a) / t(b)",
                      qualitative="-")
    assert got.verdict == verdict, got.criterion
