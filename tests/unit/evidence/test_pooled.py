"""The pooled figure: every run's rounds merged and judged again (flopkb.evidence.pooled.figure),
on the bundled KB's own H200 evidence, so the property is checked on real measurements."""

from __future__ import annotations

import pytest

from flopkb.evidence.hashing import judge_changed
from flopkb.evidence.pooled import figure, pooled
from flopkb.kb import load_kb
from flopkb.paths import bundled_root


@pytest.fixture(scope="module")
def kb():
    return load_kb(bundled_root())[0]


def _with_rounds(kb, p):
    """The runs a figure pools: those storing rounds, read under the current judge revision."""
    return [ev for ev in p.runs if ev.rounds and not judge_changed(kb.catalogue(), ev)]


# Claims whose judge reads only the points no round found launch-bound: a point launch-bound in
# any round is never read once merged, so a run that read one more point (its host issued calls
# faster) can lie outside the pooled figure, which reads the points every run could.
READS_POINTS_THE_TIMINGS_ALLOW = {"gpu-reduction/gpu-to-gpu-overhead-figure"}


def test_the_pooled_interval_covers_every_run_it_pools(kb):
    figures = [(key, p) for key, p in pooled(kb).items() if p.figure is not None]
    # the claims with two or more rounds-storing runs under the current kernels have a figure
    # (after the 2026-12-04 re-run most claims hold one current run: 5 have two or three)
    assert len(figures) >= 3
    for (claim, _), p in figures:
        runs = _with_rounds(kb, p)
        assert p.figure.runs == len(runs) >= 2, claim
        assert p.figure.rounds == sum(len(ev.rounds) for ev in runs), claim
        m = p.figure.measured
        if claim in READS_POINTS_THE_TIMINGS_ALLOW:
            continue
        for ev in runs:
            v = ev.measured.value
            assert (m.low is None or m.low <= v) and (m.high is None or v <= m.high), (
                f"{claim}: run {ev.id} measured {v}, outside the pooled [{m.low}, {m.high}]")


def test_a_run_outside_another_runs_band_is_inside_the_pooled_one(kb):
    """The case the figure exists for: on the committed H200 runs some run's value leaves another
    run's own band (a per-process shift no in-process round sees)."""
    leaving = []
    for (claim, _), p in pooled(kb).items():
        runs = _with_rounds(kb, p)
        for a in runs:
            for b in runs:
                mb = b.measured
                if a is not b and mb.low is not None and mb.high is not None and not (
                        mb.low <= a.measured.value <= mb.high):
                    leaving.append((claim, p.figure))
    if not leaving:
        # the 2026-12-04 re-run left at most three current runs per claim, all inside each
        # other's bands; the next multi-process run (3 processes) brings the case back
        pytest.skip("no committed run lies outside another run's band under the current kernels")
    assert all(f is not None for _, f in leaving)


def test_no_figure_from_one_run_or_from_runs_under_different_conditions(kb):
    p = next(p for p in pooled(kb).values() if p.figure is not None)
    a, b = _with_rounds(kb, p)[:2]
    assert figure(kb, [a]) is None
    moved = b.model_copy(update={"conditions": {**b.conditions, "steps": 12345}})
    assert figure(kb, [a, moved]) is None
    assert figure(kb, [a, b]) is not None


def test_runs_without_rounds_stay_out_of_the_figure(kb):
    p = next((p for p in pooled(kb).values()
              if p.figure is not None and any(not ev.rounds for ev in p.runs)), None)
    if p is None:
        pytest.skip("no claim pools runs with and without stored rounds under the current kernels")
    assert p.figure.runs == len(_with_rounds(kb, p)) < len(p.measuring)


def test_claims_shows_the_pooled_figure(kb):
    from flopkb.claims import list_claims

    rows = {r["claim"]: r for r in list_claims(kb)}
    row = rows["selective-ssm-scan/scan-misses-tensor-cores"]
    text = row["pooled_text"]["h200-sxm"]
    assert "rounds of" in text and text.endswith(row["runs"]["h200-sxm"]["pooled"]["verdict"])
