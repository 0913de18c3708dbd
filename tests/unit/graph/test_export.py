"""Exports read back with networkx; the picture is a real, non-empty SVG or PNG."""

from __future__ import annotations

import copy
import io
import itertools
import json
import math
import os
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path

import networkx as nx
import pytest

from flopkb.graph import KBGraph
from flopkb.graph import picture as picture_mod
from flopkb.graph.export import dot_quote, export, to_dot
from flopkb.graph.render import RenderError, layered_positions, neighbourhood, render
from flopkb.kb import load_kb
from tests.unit.graph.graph_fixture import GRAPH_KB, fixture_graph


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


def _boxes(lay: picture_mod.Layout) -> dict[str, tuple[float, float, float, float]]:
    half = picture_mod.BOX_IN / 2
    return {n: (lay.left[n], lay.y[n] - half, lay.left[n] + lay.widths[n], lay.y[n] + half)
            for n in lay.left}


def _crosses(p: tuple[float, float], q: tuple[float, float],
             box: tuple[float, float, float, float]) -> bool:
    """Whether the segment p-q enters the box (x0, y0, x1, y1): clipped against each side
    (Liang-Barsky), a touch of the edge does not count."""
    (x, y), (dx, dy) = p, (q[0] - p[0], q[1] - p[1])
    lo, hi = 0.0, 1.0
    for step, gap in ((-dx, x - box[0]), (dx, box[2] - x), (-dy, y - box[1]), (dy, box[3] - y)):
        gap -= 1e-6  # strictly inside
        if step == 0:
            if gap < 0:
                return False
            continue
        t = gap / step
        if step < 0:
            lo = max(lo, t)
        else:
            hi = min(hi, t)
    return lo < hi


def _bundled_layout() -> tuple[picture_mod.Layout, nx.DiGraph]:
    from flopkb.graph.render import _picture, _styled
    from flopkb.paths import bundled_root

    kb, _ = load_kb(bundled_root())
    kg = KBGraph.from_kb(kb)
    sub = _styled(kg, set(kg.g))
    return _picture(sub, None)[0], sub


@pytest.mark.parametrize("which", ["fixture", "bundled"])
def test_no_edge_runs_through_a_box_and_each_ends_on_its_target(which: str) -> None:
    """Issue 18: an edge ran through `hbm_bandwidth_per_sm` and read as a dependency."""
    from flopkb.graph.render import _picture, _styled

    if which == "fixture":
        kg = fixture_graph()
        lay = _picture(_styled(kg, set(kg.g)), None)[0]
    else:
        lay = _bundled_layout()[0]
    boxes = _boxes(lay)
    assert lay.edges
    for u, v, _ in lay.edges:
        points = picture_mod.route(lay, u, v)
        for p, q in pairwise(points):
            hit = [n for n, box in boxes.items() if n not in (u, v) and _crosses(p, q, box)]
            assert hit == [], (u, v, hit)
        # the arrowhead's stub is horizontal and its tip on the target box's left or right edge
        (x0, y0), (x1, y1) = points[-2:]
        left, _, right, _ = boxes[v]
        assert y0 == y1 == lay.y[v] and x1 in (left, right) and x0 != x1, (u, v)
    # the straight lines of before did cross boxes: the check above can fail
    centre = {n: ((b[0] + b[2]) / 2, lay.y[n]) for n, b in boxes.items()}
    assert any(_crosses(centre[u], centre[v], box) for u, v, _ in lay.edges
               for n, box in boxes.items() if n not in (u, v))


def test_graphviz_gets_the_routes_and_arrowheads() -> None:
    from flopkb.graph.render import _picture, _styled

    kg = fixture_graph()
    sub = _styled(kg, set(kg.g))
    lay, legend = _picture(sub, None)
    dot = picture_mod.positioned_dot(lay, sub, legend, {})
    assert "dir=forward" in dot and "dir=none" not in dot
    assert dot.count('pos="e,') == sub.number_of_edges()


def _lab(colour: str) -> tuple[float, float, float]:
    """CIELAB of an sRGB #rrggbb (D65)."""
    def lin(c: float) -> float:
        return ((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92

    r, g, b = (lin(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)
    fx, fy, fz = (c ** (1 / 3) if c > 0.008856 else 7.787 * c + 16 / 116 for c in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def test_every_legend_colour_is_a_different_one() -> None:
    """Issue 18: the legend reused colours (four greens, three reds). CIE76 distance >= 15
    between any two (about where two swatches stop reading as one colour side by side)."""
    from flopkb.graph.render import RELATION_STYLE, STATUS_COLOURS, VERDICT_COLOURS

    legend = picture_mod.legend_entries(STATUS_COLOURS, RELATION_STYLE, VERDICT_COLOURS)
    colours = [c.lower() for _, entries in legend for _, c, _ in entries]
    assert len(colours) == len(set(colours))
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(colours, 2))
    assert closest >= 15, closest
    # an evidence edge's verdict colour is explained by the claim entry of the same colour
    texts = {c: t for _, entries in legend for _, c, t in entries}
    for verdict in ("confirmed", "refuted", "inconclusive"):
        assert "evidence" in texts[VERDICT_COLOURS[verdict]]


def test_evidence_boxes_name_their_claim() -> None:
    lay, sub = _bundled_layout()
    evidence = [n for n, d in sub.nodes(data=True) if d["kind"] == "evidence"]
    assert evidence
    for n in evidence:
        claim = sub.nodes[n].get("claim")
        assert lay.labels[n].startswith(f"{claim or 'ceilings'} @ "), lay.labels[n]


def test_a_picture_over_the_budget_is_refused_before_drawing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flopkb import budget
    from flopkb.graph.render import PictureTooLarge

    kg = fixture_graph()
    drawn: list[str] = []
    monkeypatch.setattr(picture_mod, "draw", lambda *a: drawn.append("drawn"))
    monkeypatch.setitem(budget.PICTURE_MAX_ITEMS, "matplotlib", 50)
    with pytest.raises(PictureTooLarge, match=r"30 nodes and 56 edges, over the 50 matplotlib"):
        render(kg, tmp_path / "g.svg", engine="matplotlib")
    monkeypatch.setitem(budget.PICTURE_MAX_ITEMS, "matplotlib", 4000)
    monkeypatch.setattr(budget, "PICTURE_MAX_PIXELS", 100_000)
    with pytest.raises(PictureTooLarge, match=r"the PNG would be [\d,]+ x [\d,]+ px"):
        render(kg, tmp_path / "g.png", engine="matplotlib")
    assert drawn == [] and list(tmp_path.iterdir()) == []
    render(kg, tmp_path / "g.svg", engine="matplotlib")  # an SVG has no canvas to hold
    assert drawn == ["drawn"]


def test_a_record_of_thousands_of_rows_is_refused_not_drawn(tmp_path: Path) -> None:
    """Issue 18: a 9,000-row record took 375 s and 4.9 GB to draw (a 3390 x 325,699 canvas)."""
    from flopkb.graph.render import PictureTooLarge

    kb_root = tmp_path / "kb"
    shutil.copytree(Path(__file__).resolve().parents[2] / "cases/valid/small-kb", kb_root)
    rows = "".join(f"    - {{id: r{i}, quantity: bf16_tensor_flops, effect: 'runs on tensor "
                   "cores', magnitude: qualitative, basis: unverified}\n" for i in range(3000))
    (kb_root / "records/classes/many-rows.yaml").write_text(
        "schema_version: 2\nid: many-rows\nkind: operator\ntitle: t\n"
        "history: [{date: 2026-11-30, by: b, note: n}]\naffected_by_hardware: [h100-sxm]\n"
        f"prose: it runs on tensor cores\nflop:\n  hardware_parameters:\n{rows}"
    )
    kb, _ = load_kb(kb_root)
    kg = KBGraph.from_kb(kb)
    for engine in ("matplotlib", "graphviz"):
        with pytest.raises(PictureTooLarge, match="nodes"):
            render(kg, tmp_path / "big.png", engine=engine)
    assert not (tmp_path / "big.png").exists()


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_a_signal_while_dot_starts_leaves_no_dot_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal after the fork but before Popen returns (the window a loaded machine widens:
    tests/cli/test_interrupts.py failed so beside a CPU hog) raised where nothing held the
    child, which kept running. Now it is held until the child can be killed."""
    from flopkb.graph.render import _run_child

    class Stop(BaseException):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Stop

    started: list[int] = []
    original = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def starting(self: subprocess.Popen[bytes], *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        started.append(self.pid)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives before Popen has returned

    monkeypatch.setattr(subprocess.Popen, "_execute_child", starting)
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with pytest.raises(Stop):
            _run_child(["sleep", "60"], b"", timeout=30)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert started
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(started[0], 0)
