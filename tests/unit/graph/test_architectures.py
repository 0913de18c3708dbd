"""Architecture nodes and edges of the dependency graph, on the bundled KB."""

from __future__ import annotations

from flopkb.graph import KBGraph, affects
from flopkb.kb import load_kb
from flopkb.paths import bundled_root


def _graph() -> KBGraph:
    kb, _ = load_kb(bundled_root())
    return KBGraph.from_kb(kb)


def test_edges_of_an_architecture() -> None:
    g = _graph().g
    arch = "architecture:jamba-1-5-mini"
    assert g.nodes[arch]["kind"] == "architecture"
    assert g["class:jamba"][arch]["relation"] == "has_architecture"
    row = g["claim:jamba/kv-cache-reduction"]["architecture:mixtral-8x7b"]
    assert row == {"relation": "computed_from", "value": "kv_cache_ratio"}
    assert g[arch]["source:hf-jamba-1-5-mini-config"]["relation"] == "cites"
    assert g[arch]["quantity:hbm_bandwidth"] == {"relation": "depends_on", "via": "roofline"}
    assert g.graph["dangling"] == []


def test_affects_lists_architectures_apart_from_claims() -> None:
    result = affects(_graph(), "hbm_bandwidth")
    assert "nemotron-h-8b" in result["architectures"]
    assert not any(c.startswith(("nemotron-h-8b", "architecture")) for c in result["claims"])
    assert affects(_graph(), "sm_count")["architectures"] == []
