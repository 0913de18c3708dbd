"""`graph what-if --set q=v`: a datasheet value must be a finite number, and positive for rate,
size and count quantities; anything else is one line and exit 2, never a pydantic dump."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.graph import queries
from flopkb.graph.queries import GraphQueryError, KBGraph
from flopkb.kb import load_kb

GRAPH_KB = Path(__file__).resolve().parents[1] / "fixtures" / "graph_kb"
runner = CliRunner()


def _what_if(setting: str):
    args = ["--kb", str(GRAPH_KB), "graph", "what-if", "h100-sxm", "--set", setting, "-f", "json"]
    return runner.invoke(app, args)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("hbm_bandwidth=nan", "expected a finite number"),
        ("hbm_bandwidth=NaN", "expected a finite number"),
        ("hbm_bandwidth=inf", "expected a finite number"),
        ("hbm_bandwidth=-inf", "expected a finite number"),
        ("hbm_bandwidth=-1", "expected a positive number, got -1"),
        ("hbm_bandwidth=0", "expected a positive number, got 0"),
        ("bf16_tensor_flops=-989", "expected a positive number"),
        ("hbm_bandwidth=abc", "expected QUANTITY=NUMBER"),
        ("hbm_bandwidth=", "expected QUANTITY=NUMBER"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(setting: str, message: str) -> None:
    args = ["--kb", str(GRAPH_KB), "graph", "what-if", "h100-sxm", "--set", setting]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopkb: error: "), result.stderr
    assert message in lines[0]
    assert "validation error" not in result.stderr
    # under --format json the same error is one JSON document on stdout (issue 11)
    result = _what_if(setting)
    assert result.exit_code == 2 and result.stderr == ""
    error = json.loads(result.stdout)["error"]
    assert message in error["message"] and "validation error" not in error["message"]


def test_a_positive_value_still_answers() -> None:
    result = _what_if("hbm_bandwidth=6.7e12")
    assert result.exit_code == 0, result.output
    moved = {q["id"]: q for q in json.loads(result.stdout)["quantities"]}
    assert moved["ridge_point_bf16"]["after"] > 0


@pytest.mark.parametrize(
    ("unit", "positive"),
    [("TB/s", True), ("B/s", True), ("TFLOP/s", True), ("TOPS", True), ("OP/s", True),
     ("GB", True), ("KiB", True), ("B", True), ("count", True),
     ("ratio", False), ("1", False), ("FLOP/B", False), (None, False)],
)  # fmt: skip
def test_which_units_must_be_positive(unit: str | None, positive: bool) -> None:
    assert queries._positive_only(unit) is positive


def test_the_library_refuses_what_the_cli_refuses() -> None:
    kg = KBGraph.from_kb(load_kb(GRAPH_KB)[0])
    with pytest.raises(GraphQueryError, match="positive"):
        queries.what_if(kg, "h100-sxm", {"hbm_bandwidth": -1.0})
    with pytest.raises(GraphQueryError, match="finite"):
        queries.what_if(kg, "h100-sxm", {"hbm_bandwidth": float("nan")})
