"""Exports read back with networkx; the picture is a real, non-empty SVG or PNG."""

from __future__ import annotations

import copy
import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from flopkb.graph import KBGraph
from flopkb.graph.export import dot_quote, export, to_dot
from flopkb.graph.render import RenderError, layered_positions, neighbourhood, render
from flopkb.kb import load_kb
from tests.unit.graph_fixture import GRAPH_KB, fixture_graph


def test_node_link_json_round_trips() -> None:
    g = fixture_graph().g
    back = nx.node_link_graph(json.loads(export(g, "json")), edges="edges")
    assert set(back.nodes) == set(g.nodes)
    assert set(back.edges(data="relation")) == set(g.edges(data="relation"))
    assert back.nodes["claim:scan-op/ridge-claim"]["conditions"] == {}


def test_export_does_not_depend_on_the_order_records_were_loaded() -> None:
    kb, _ = load_kb(GRAPH_KB)
    reversed_kb = copy.copy(kb)
    reversed_kb.records = dict(reversed(list(kb.records.items())))
    assert list(reversed_kb.records) != list(kb.records)
    for fmt in ("json", "graphml", "dot"):
        assert export(KBGraph.from_kb(reversed_kb).g, fmt) == export(fixture_graph().g, fmt)


def test_graphml_round_trips_with_non_scalars_as_json() -> None:
    g = fixture_graph().g
    back = nx.read_graphml(
        io.BytesIO(export(g, "graphml").encode()),
    )
    assert set(back.nodes) == set(g.nodes)
    assert set(back.edges(data="relation")) == set(g.edges(data="relation"))
    assert back.nodes["claim:scan-op/ridge-claim"]["conditions"] == "{}"
    assert back.nodes["quantity:ridge_point_bf16"]["formula"] == "bf16_tensor_flops / hbm_bandwidth"
    # None is left out: a datasheet quantity has no formula attribute at all
    assert "formula" not in back.nodes["quantity:hbm_bandwidth"]


def test_dot_has_every_node_and_edge_and_escapes_quotes() -> None:
    g = fixture_graph().g
    text = export(g, "dot")
    assert text.startswith("digraph flopkb {") and text.rstrip().endswith("}")
    assert text.count(" -> ") == g.number_of_edges()
    assert '"quantity:ridge_point_bf16" -> "quantity:hbm_bandwidth" [label="derived_from"]' in text
    assert dot_quote('a "quoted"\nline\\') == '"a \\"quoted\\"\\nline\\\\"'
    weird = nx.DiGraph()
    weird.add_node('x"y', kind="source", label='x"y')
    assert '"x\\"y" [label="x\\"y"' in to_dot(weird)


def test_unknown_export_format() -> None:
    with pytest.raises(ValueError, match="expected one of json, graphml, dot"):
        export(fixture_graph().g, "gexf")


def test_layers_follow_kind_columns() -> None:
    pos = layered_positions(fixture_graph().g)
    x = {n: p[0] for n, p in pos.items()}
    assert x["source:src-paper"] < x["class:scan-op"] < x["claim:scan-op/ridge-claim"]
    assert (
        x["claim:scan-op/ridge-claim"]
        < x["quantity:ridge_point_bf16"]
        < x["quantity:hbm_bandwidth"]
    )
    assert x["quantity:hbm_bandwidth"] < x["accelerator:h100-sxm"] < x["evidence:ev-bw-a100"]
    assert all(0.0 <= p[1] <= 1.0 for p in pos.values())


def test_focus_neighbourhood_of_a_quantity() -> None:
    hood = neighbourhood(fixture_graph().g, "quantity:ridge_point_bf16")
    assert hood == {
        "quantity:ridge_point_bf16",
        "quantity:bf16_tensor_flops",
        "quantity:hbm_bandwidth",
        "claim:scan-op/ridge-claim",
        "class:scan-op",
    }


def test_matplotlib_render_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "graph.png"
    info = render(fixture_graph(), out, engine="matplotlib")
    assert info == {
        "out": str(out),
        "engine": "matplotlib",
        "focus": None,
        "nodes": 30,
        "edges": 56,
    }
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temp file left behind


def test_render_focus(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "f.svg"
    info = render(fixture_graph(), out, focus="hbm_bandwidth", engine="matplotlib")
    assert info["focus"] == "quantity:hbm_bandwidth" and 0 < info["nodes"] < 30
    assert out.read_bytes().startswith(b"<?xml")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` not on PATH")
def test_graphviz_render(tmp_path: Path) -> None:
    info = render(fixture_graph(), tmp_path / "g.svg", engine="graphviz")
    assert info["engine"] == "graphviz" and (tmp_path / "g.svg").read_bytes().startswith(b"<?xml")


def test_render_refuses_other_suffixes(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"\.svg or \.png"):
        render(fixture_graph(), tmp_path / "g.pdf")


def _svg_texts(path: Path) -> list[tuple[float, float, str]]:
    """(x, y, text) of every text element, in the SVG's own units (y grows downwards)."""
    found = []
    for el in ET.parse(path).getroot().iter():
        if el.tag.endswith("}text") and el.get("x") is not None:
            found.append((float(el.get("x", 0)), float(el.get("y", 0)), "".join(el.itertext())))
    return found


def test_one_layout_feeds_both_engines() -> None:
    from flopkb.graph import picture
    from flopkb.graph.render import _picture, _styled

    kg = fixture_graph()
    sub = _styled(kg, set(kg.g))
    lay, legend = _picture(sub, None)
    assert sum(1 + len(entries) for _, entries in legend) == picture.LEGEND_ROWS
    # claims read class/row; the legend column starts right of every node
    assert lay.labels["claim:scan-op/ridge-claim"] == "scan-op/ridge-claim"
    assert lay.legend_x > max(lay.left[n] + lay.widths[n] for n in lay.left)
    # graphviz gets exactly the layout's positions (neato -n2 keeps them)
    dot = picture.positioned_dot(lay, sub, legend, {})
    top = lay.height * 72
    for n in lay.left:
        x, y = (lay.left[n] + lay.widths[n] / 2) * 72, top - lay.y[n] * 72
        assert f'pos="{x:.1f},{y:.1f}!"' in dot, n


def test_matplotlib_svg_keeps_text_and_the_legend_covers_nothing(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "graph.svg"
    render(fixture_graph(), out, engine="matplotlib")
    texts = _svg_texts(out)
    labels = {t for _, _, t in texts}
    assert {"scan-op/ridge-claim", "memory-model/cap-claim", "hbm_bandwidth"} <= labels
    legend_x = min(x for x, _, t in texts if t == "claim (by status)")
    node_texts = [x for x, _, t in texts if t in {"scan-op/ridge-claim", "ev-bw-a100", "h100-sxm"}]
    assert node_texts and all(x < legend_x for x in node_texts)


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` not on PATH")
def test_graphviz_and_matplotlib_draw_the_same_columns_and_order(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from flopkb.graph.picture import node_label

    drawn = {}
    for engine in ("graphviz", "matplotlib"):
        render(fixture_graph(), tmp_path / f"{engine}.svg", engine=engine)
        names = {node_label(d) for _, d in fixture_graph().g.nodes(data=True)}
        shown = {t: (x, y) for x, y, t in _svg_texts(tmp_path / f"{engine}.svg")}
        labels = sorted(t for t in shown if t in names)
        # graphviz may shift the whole drawing by its margin: compare from the leftmost label
        left = min(shown[t][0] for t in labels)
        drawn[engine] = {t: (shown[t][0] - left, shown[t][1]) for t in labels}
    gv, mpl = drawn["graphviz"], drawn["matplotlib"]
    assert set(gv) == set(mpl)
    for t in gv:
        assert abs(gv[t][0] - mpl[t][0]) < 8, t  # same column, same left edge (points)
    by_y = {e: [t for t in sorted(d, key=lambda t: (round(d[t][0] / 20), d[t][1]))]
            for e, d in drawn.items()}
    assert by_y["graphviz"] == by_y["matplotlib"]
