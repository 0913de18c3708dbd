"""The tiny KB of tests/fixtures/graph_kb and its graph, shared by the graph tests."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from flopkb.graph import KBGraph
from flopkb.kb import load_kb

GRAPH_KB = Path(__file__).resolve().parents[2] / "fixtures" / "graph_kb"


@cache
def fixture_graph() -> KBGraph:
    """The fixture KB's graph, built once per test session."""
    kb, findings = load_kb(GRAPH_KB)
    assert not findings, findings
    return KBGraph.from_kb(kb)
