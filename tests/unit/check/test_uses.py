"""The validator's graph checks read the KB directly (`flopkb.check.uses`); they must give the
graph's own answers: in-degree of quantity and source nodes, and `queries.not_applicable`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopkb.check.uses import not_applicable, used_quantities, used_sources
from flopkb.graph.build import node_id
from flopkb.graph.queries import KBGraph
from flopkb.graph.queries import not_applicable as graph_not_applicable
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from tests.unit.graph.graph_fixture import GRAPH_KB

SMALL_KB = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"


def _awkward(tmp_path: Path) -> Path:
    """The graph fixture with duplicate row ids, unknown references and a formula cycle."""
    root = tmp_path / "kb"
    shutil.copytree(GRAPH_KB, root)
    for path in (root / "records/classes").glob("*.yaml"):
        text = path.read_text()
        text = text.replace("affected_by_hardware: [", "affected_by_hardware: [no-such-gpu, ")
        path.write_text(text)
    q = root / "records/quantities/int4_ridge_point.yaml"
    q.write_text(q.read_text().replace("formula: ", "formula: int4_ridge_per_simt * "))
    return root


@pytest.mark.parametrize("which", ["bundled", "fixture", "small", "awkward"])
def test_direct_answers_equal_the_graphs(which: str, tmp_path: Path) -> None:
    root = {
        "bundled": bundled_root(), "fixture": GRAPH_KB, "small": SMALL_KB,
        "awkward": _awkward(tmp_path) if which == "awkward" else GRAPH_KB,
    }[which]  # fmt: skip
    kb, _ = load_kb(root)
    kg = KBGraph.from_kb(kb)
    assert not_applicable(kb) == graph_not_applicable(kg)
    graph_used_q = {q for q in kb.quantities if kg.g.in_degree(node_id("quantity", q)) > 0}
    assert used_quantities(kb) == graph_used_q
    by_class = {ref.id for c in kb.classes.values() for ref in c.sources}
    graph_used_s = {
        s for s in kb.sources if kg.g.in_degree(node_id("source", s)) > 0 or s in by_class
    }
    assert used_sources(kb) == graph_used_s
