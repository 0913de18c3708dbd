"""`verify --gpu --recheck`: the comparison of a record with fake measurements of the same claim
(no GPU here: `run_gpu` is replaced by one returning the fake result)."""

from __future__ import annotations

import pytest

from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from flopkb.verify import plan
from flopkb.verify import recheck as rc

B5 = "ev-mamba2-ssd--kernel-vs-pytorch-h200-sxm-20261201t154805z"


@pytest.fixture(scope="module")
def kb():
    kb, _ = load_kb(bundled_root())
    return kb


def _again(ev, values: dict[str, tuple[str, float]]) -> dict:
    """A verify result with each combination's (verdict, value), keyed by its ssd side."""
    return {"claim": ev.claim, "verdict": values["bundled"][0],
            "judgements": [{"combination": dict(j.combination),
                            "verdict": values[j.combination["ssd"]][0],
                            "measured": {"value": values[j.combination["ssd"]][1]}}
                           for j in ev.judgements]}


def test_inside_the_recorded_interval_reproduces(kb):
    ev = kb.evidence[B5]  # bundled 13.7x [12.6, 14.7], mamba_ssm 3.89x [3.55, 4.45], fla 5.45x
    out = rc.compare(ev, _again(ev, {"bundled": ("confirmed", 13.0),
                                     "mamba_ssm": ("confirmed", 3.6),
                                     "fla": ("confirmed", 5.5)}))
    assert [o.status for o in out] == [rc.REPRODUCES] * 3 and rc.reproduces(out)


def test_a_value_outside_the_interval_keeps_the_verdict_only(kb):
    # the second run: 9.9x, outside [12.6, 14.7], still confirmed
    ev = kb.evidence[B5]
    out = rc.compare(ev, _again(ev, {"bundled": ("confirmed", 9.9),
                                     "mamba_ssm": ("refuted", 0.9),
                                     "fla": ("confirmed", 5.5)}))
    assert [o.status for o in out] == [rc.VERDICT_HOLDS, rc.DIFFERS, rc.REPRODUCES]
    assert not rc.reproduces(out)


def test_a_combination_not_measured_again_is_said_so(kb):
    ev = kb.evidence[B5]
    again = _again(ev, {"bundled": ("confirmed", 13.0), "mamba_ssm": ("confirmed", 3.6),
                        "fla": ("confirmed", 5.5)})
    again["judgements"] = again["judgements"][:1]
    assert [o.status for o in rc.compare(ev, again)][1:] == [rc.NOT_MEASURED] * 2


def test_recheck_runs_the_records_claim_and_writes_nothing(kb, monkeypatch):
    ev = kb.evidence[B5]
    seen = {}

    def fake_run_gpu(kb_, jobs, **kw):
        seen.update(kw, experiments=[j.experiment for j in jobs],
                    claims=[t.claim for j in jobs for t in j.targets])
        again = _again(ev, {"bundled": ("confirmed", 14.0), "mamba_ssm": ("confirmed", 4.0),
                            "fla": ("confirmed", 6.0)})
        return {"gpu": "fake"}, [plan.Result(ev.claim, ev.experiment, "confirmed",
                                               judgements=again["judgements"])]

    monkeypatch.setattr(rc, "run_gpu", fake_run_gpu)
    machine, out = rc.recheck(kb, ev, rounds=3)
    assert machine == {"gpu": "fake"} and rc.reproduces(out)
    assert seen["write"] is False and seen["impl"] == "all" and seen["rounds"] == 3
    assert seen["experiments"] == [ev.experiment] and ev.claim in seen["claims"]
    cal = next(e for e in kb.evidence.values() if e.claim is None)
    with pytest.raises(ValueError, match="calibration"):
        rc.recheck(kb, cal)
