"""The equivalence quantity: errors of outputs and states against a reference, the verdict read
from stored numbers and the declared tolerance, and its use in a hook-less declaration."""

from __future__ import annotations

import math

import pytest
import torch
from pydantic import ValidationError

from flopkb.evidence import equivalence
from flopkb.model.experiment import Experiment, Produced


def test_errors_are_max_abs_and_max_abs_relative_to_the_reference_scale() -> None:
    want = torch.tensor([[1.0, -4.0], [2.0, 0.5]])
    got = want + torch.tensor([[0.0, 0.02], [-0.01, 0.0]])
    e = equivalence.errors("o", got, want)
    assert e["tensor"] == "o" and e["shape"] == [2, 2] and e["dtype"] == "float32"
    assert e["max_abs_err"] == pytest.approx(0.02)
    assert e["max_abs_ref"] == pytest.approx(4.0)
    assert e["max_rel_err"] == pytest.approx(0.005)


def test_a_nan_output_or_a_shape_mismatch_is_stored_as_null_and_read_as_infinite() -> None:
    want = torch.ones(3)
    nan = equivalence.errors("o", torch.tensor([1.0, math.nan, 1.0]), want)
    assert nan["max_abs_err"] is None
    assert equivalence.tolerance_ratio(nan, 1.0, 1.0) == math.inf
    shape = equivalence.errors("s", torch.ones(4), want)
    assert shape["max_abs_err"] is None and "shape" in shape["note"]
    counted = equivalence.compare(["o"], (torch.ones(3), torch.ones(3)), (want,))
    assert counted[0]["max_abs_err"] is None and "outputs" in counted[0]["note"]


@pytest.mark.parametrize(("err", "verdict"), [
    (0.0, "confirmed"), (1e-3 + 1e-2 * 2.0, "confirmed"),
    (2 * (1e-3 + 1e-2 * 2.0), "inconclusive"), (11 * (1e-3 + 1e-2 * 2.0), "refuted"),
])
def test_the_worst_tensor_is_read_against_atol_plus_rtol_times_the_reference_scale(
        err: float, verdict: str) -> None:
    fine = {"tensor": "o", "shape": [2], "dtype": "float32", "max_abs_err": 0.0,
            "max_abs_ref": 2.0, "max_rel_err": 0.0}
    worst = {**fine, "tensor": "state", "max_abs_err": err, "max_rel_err": err / 2.0}
    j = equivalence.judge_entries([fine, worst], 1e-3, 1e-2, what="toy")
    assert j.verdict == verdict
    assert j.measured.value == pytest.approx(err / (1e-3 + 2e-2))
    assert err == 0.0 or "state" in j.what


def test_nothing_measured_is_an_error_not_a_confirmation() -> None:
    assert equivalence.judge_entries([], 1e-3, 1e-2, what="toy").verdict == "error"


def test_a_claim_of_several_parts_is_confirmed_only_when_every_part_is() -> None:
    c = equivalence.conjunction
    assert c(["confirmed", "confirmed"]) == "confirmed"
    assert c(["confirmed", "inconclusive"]) == "inconclusive"
    assert c(["inconclusive", "refuted"]) == "refuted"
    assert c(["confirmed", "error"]) == "error"
    assert c([]) == "inconclusive"


def test_an_equivalence_declares_its_tolerance_and_nothing_else_does() -> None:
    Produced(quantity="equivalence", side="x", atol=0.0, rtol=1e-3, outputs=["o", "state"])
    with pytest.raises(ValidationError, match="atol and rtol"):
        Produced(quantity="equivalence", side="x", atol=1e-3)
    with pytest.raises(ValidationError, match="belong to an equivalence"):
        Produced(quantity="time_ratio", numerator="a", denominator="b", rtol=1e-3)
    with pytest.raises(ValidationError):
        Experiment.model_validate({"id": "e", "title": "t", "measures": "m", "criterion": "c",
                                   "produces": ["equivalence"]})
