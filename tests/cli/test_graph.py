"""`flopkb graph`: JSON output equals what the library returns; text renders; bad ids exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.graph import KBGraph, affects, diff, path, status, what_if, why
from flopkb.kb import load_kb

GRAPH_KB = Path(__file__).resolve().parents[1] / "fixtures" / "graph_kb"
runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, ["--kb", str(GRAPH_KB), "graph", *args])


def kg() -> KBGraph:
    return KBGraph.from_kb(load_kb(GRAPH_KB)[0])


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@pytest.mark.parametrize(
    "args, expected",
    [
        (["affects", "hbm_bandwidth"], lambda g: affects(g, "hbm_bandwidth")),
        (["affects", "h100-sxm", "--direct"], lambda g: affects(g, "h100-sxm", via_specs=False)),
        (["affects", "src-datasheet"], lambda g: affects(g, "src-datasheet")),
        (["why", "int4-op"], lambda g: why(g, "int4-op")),
        (["why", "scan-op", "--on", "h200-sxm"], lambda g: why(g, "scan-op", "h200-sxm")),
        (["diff", "h100-sxm", "h200-sxm"], lambda g: diff(g, "h100-sxm", "h200-sxm")),
        (
            [
                "what-if",
                "h100-sxm",
                "--set",
                "hbm_bandwidth=6.7e12",
                "--set",
                "int4_tensor_ops=1e15",
            ],
            lambda g: what_if(g, "h100-sxm", {"hbm_bandwidth": 6.7e12, "int4_tensor_ops": 1e15}),
        ),
        (["path", "src-class", "hbm_bandwidth"], lambda g: path(g, "src-class", "hbm_bandwidth")),
        (["status"], status),
    ],
)
def test_json_equals_library(args: list[str], expected: Any) -> None:
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == as_json(expected(kg()))


def test_affects_text_shows_the_path() -> None:
    result = invoke("affects", "hbm_bandwidth")
    assert result.exit_code == 0, result.output
    assert "3 claims in 3 classes" in result.stdout
    # rich wraps long lines at the terminal width: compare with whitespace runs collapsed
    text = " ".join(result.stdout.split())
    assert "-depends_on-> ridge_point_bf16 -derived_from-> hbm_bandwidth" in text


@pytest.mark.parametrize(
    "args, needle",
    [
        (["why", "int4-op", "--on", "h100-sxm"], "int4_tensor_ops"),
        (["diff", "h100-sxm", "h200-sxm"], "x1.43"),
        (["what-if", "h100-sxm", "--set", "hbm_bandwidth=6.7e12"], "x0.50"),
        (["path", "src-class", "hbm_bandwidth"], "src-class <-cites- scan-op/ridge-claim"),
        (["path", "src-orphan", "h100-sxm"], "no path between"),
        (["status"], "contradicted: 1"),
    ],
)
def test_text_output(args: list[str], needle: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert needle in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["affects", "hbm_bandwith"],
            "unknown quantity or accelerator or source id 'hbm_bandwith' "
            "(did you mean hbm_bandwidth?)",
        ),
        (
            ["affects", "scan-op"],
            "'scan-op' is a class; expected a quantity or accelerator or source",
        ),
        (["why", "scan-opp"], "unknown class id 'scan-opp' (did you mean scan-op?)"),
        (["diff", "h100-sxm", "h300-sxm"], "unknown accelerator id 'h300-sxm'"),
        (["what-if", "h100-sxm", "--set", "ridge_point_bf16=1"], "ridge_point_bf16 is computed"),
        (["what-if", "h100-sxm", "--set", "hbm_bandwidth"], "expected QUANTITY=NUMBER"),
        (["path", "nowhere", "h100-sxm"], "unknown class or claim or quantity"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"flopkb: error: {result.stderr.strip()[15:]}"]
    assert message in result.stderr
    # under --format json the same error is one JSON document on stdout, stderr stays empty
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 2
    assert result.stderr == ""
    error = json.loads(result.stdout)
    assert error["ok"] is False and error["error"]["exit_code"] == 2
    assert message in error["error"]["message"]


@pytest.mark.parametrize("fmt", ["json", "graphml", "dot"])
def test_export_to_stdout_and_file(tmp_path: Path, fmt: str) -> None:
    result = invoke("export", "--format", fmt)
    assert result.exit_code == 0, result.output
    out = tmp_path / f"graph.{fmt}"
    written = invoke("export", "--format", fmt, "--out", str(out))
    assert written.exit_code == 0, written.output
    assert out.read_text() == result.stdout
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    if fmt == "json":
        back = nx.node_link_graph(json.loads(result.stdout), edges="edges")
        assert back.number_of_nodes() == 30 and back.number_of_edges() == 56
    elif fmt == "graphml":
        assert nx.read_graphml(out).number_of_edges() == 56


def test_export_rejects_text_format() -> None:
    assert invoke("export", "--format", "text").exit_code == 2


def test_render_json(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "focus.svg"
    result = invoke(
        "render",
        str(out),
        "--focus",
        "ridge_point_bf16",
        "--engine",
        "matplotlib",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "out": str(out),
        "engine": "matplotlib",
        "focus": "quantity:ridge_point_bf16",
        "nodes": 5,
        "edges": 4,
    }
    assert out.stat().st_size > 1000


def test_render_unknown_focus_and_bad_suffix(tmp_path: Path) -> None:
    bad = invoke("render", str(tmp_path / "x.svg"), "--focus", "nothing")
    assert bad.exit_code == 2 and "unknown" in bad.stderr
    pdf = invoke("render", str(tmp_path / "x.pdf"))
    assert pdf.exit_code == 2 and ".svg or .png" in pdf.stderr
    assert list(tmp_path.iterdir()) == []


def test_render_over_the_budget_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A picture too large for the budget comes from the KB's content: exit 1, never 2."""
    from flopkb import budget

    monkeypatch.setitem(budget.PICTURE_MAX_ITEMS, "matplotlib", 10)
    result = invoke("render", str(tmp_path / "x.png"), "--engine", "matplotlib")
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("flopkb: error: refused: the graph has 30 nodes and 56 edges")
    assert "--focus" in line and list(tmp_path.iterdir()) == []
    as_json = invoke("render", str(tmp_path / "x.png"), "--engine", "matplotlib", "--format",
                     "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["kind"] == "too-large"
