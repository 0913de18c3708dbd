"""The picture of the dependency graph: one layout, drawn by graphviz or by matplotlib alike.

`layout` places every node once, in inches: columns by kind, left to right (sources | classes |
claims | computed quantities | datasheet quantities | accelerators | evidence), each column as
wide as its longest label, nodes ordered within a column by `render.layered_positions` (barycentre
sweeps: a class's claims stay together, next to what they depend on); a legend column to the right
of the last column, so the legend never covers a node. Both engines draw exactly these positions:
graphviz through `neato -n2` (fixed positions, `positioned_dot`), matplotlib through `draw`; the
labels (`class/row` for claims, evidence by claim, part and date), colours, column headers, legend
entries and edge routes are the same. `route` runs every edge through the gaps between columns and
between the boxes of a column it crosses, never through a box, and ends it in an arrowhead.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import networkx as nx

from flopkb.graph.build import EVIDENCE_RELATIONS
from flopkb.graph.export import KIND_COLOURS, dot_quote

COLUMN_TITLES = {
    "source": "sources",
    "architecture": "architectures",
    "class": "classes",
    "claim": "claims (class/row)",
    "computed": "computed quantities",
    "quantity": "datasheet quantities",
    "accelerator": "accelerators",
    "evidence": "evidence",
}
PNG_DPI = 150
FONT_PT = 7.5
# Width of one character of the label font at FONT_PT, in inches (DejaVu Sans averages ~0.6 em;
# Helvetica is narrower): column widths are computed from it, so it errs wide.
CHAR_IN = FONT_PT * 0.6 / 72
PITCH_IN = 0.24  # vertical distance between two nodes of a column
BOX_IN = 0.17  # height of a node's box
LEGEND_ROW_IN = 0.16  # one legend line
LEGEND_ROWS = 27  # section titles and entries of `legend_entries` (a test keeps them equal)
GAP_IN = 0.9  # horizontal gap between columns, where the edges run
TOP_IN = 0.85  # title and column headers
LEGEND_IN = 2.6
# an edge keeps this far from the boxes it passes between (inches), and runs its last this many
# inches straight into the box it points to, so the arrowhead lies flat on the box's edge
CLEARANCE_IN = 0.012
STUB_IN = 0.12


@dataclass
class Layout:
    """Node positions (label box's left edge and centre line, inches from the top left) and what
    both engines write."""

    left: dict[str, float]
    y: dict[str, float]
    labels: dict[str, str]
    widths: dict[str, float]
    headers: list[tuple[str, float]]
    legend_x: float
    width: float
    height: float
    title: str
    centre: str | None = None
    edges: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    # per column (left to right): its left and right x, and the centre lines of its boxes
    columns: list[tuple[float, float, list[float]]] = field(default_factory=list)
    column: dict[str, int] = field(default_factory=dict)


def node_label(d: dict[str, Any]) -> str:
    """What a node shows: claims as `class/row`, evidence by the claim it measured, the part and
    the date (`mamba2-ssd/ssd-vs-fused-scan @ h200-sxm 2026-11-30`; the id is too long)."""
    if d["kind"] == "evidence":
        what = d.get("claim") or "ceilings"
        return f"{what} @ {d.get('accelerator') or '?'} {str(d.get('timestamp', ''))[:10]}".strip()
    return str(d["label"])


def layout(sub: nx.DiGraph, order: dict[str, tuple[float, float]], centre: str | None,
           column_of: dict[str, str]) -> Layout:
    """Place the nodes of `sub`; `order` is `layered_positions` (column index, y in [0, 1])."""
    columns: dict[float, list[str]] = {}
    for n, (x, _) in order.items():
        columns.setdefault(x, []).append(n)
    labels = {n: node_label(d) for n, d in sub.nodes(data=True)}
    widths = {n: len(text) * CHAR_IN + 0.2 for n, text in labels.items()}
    tallest = max((len(ns) for ns in columns.values()), default=1)
    body = max(tallest * PITCH_IN, 2.0)
    left: dict[str, float] = {}
    y: dict[str, float] = {}
    headers = []
    extents: list[tuple[float, float, list[float]]] = []
    index: dict[str, int] = {}
    x = 0.3
    for col in sorted(columns):
        ns = columns[col]
        name = column_of[ns[0]]
        for n in ns:
            left[n] = x
            # layered_positions' y runs from 1 (top) to 0; spread each column over the full height
            y[n] = TOP_IN + (1.0 - order[n][1]) * body
            index[n] = len(extents)
        headers.append((COLUMN_TITLES[name], x))
        right = x + max(widths[n] for n in ns)
        extents.append((x, right, sorted(y[n] for n in ns)))
        x += max(max(widths[n] for n in ns), len(COLUMN_TITLES[name]) * CHAR_IN * 1.2) + GAP_IN
    title = "flopkb dependency graph" + (f" around {centre}" if centre else "")
    title += f" ({sub.number_of_nodes()} nodes, {sub.number_of_edges()} edges)"
    # the legend column may be taller than the nodes (a small --focus picture): room for both
    return Layout(left, y, labels, widths, headers, legend_x=x, width=x + LEGEND_IN,
                  height=TOP_IN + max(body, LEGEND_ROWS * LEGEND_ROW_IN) + 0.4, title=title,
                  centre=centre,
                  edges=sorted(sub.edges(data=True), key=lambda e: (e[0], e[1])),
                  columns=extents, column=index)


def _free_y(ys: list[float], want: float, top: float, bottom: float) -> float:
    """The height nearest `want` at which a line crosses a column without touching its boxes
    (centre lines `ys`, sorted): in a gap between two boxes, above the first or below the last."""
    half = BOX_IN / 2 + CLEARANCE_IN
    gaps = [(top, ys[0] - half)] if ys else [(top, bottom)]
    gaps += [(a + half, b - half) for a, b in pairwise(ys) if b - a > 2 * half]
    if ys:
        gaps.append((ys[-1] + half, bottom))
    # a gap narrower than the clearance is no gap; the middle of a gap reads best
    best = min((g for g in gaps if g[1] >= g[0]),
               key=lambda g: abs(min(max(want, g[0]), g[1]) - want))
    return min(max(want, best[0]), best[1]) if best[1] - best[0] > 2 * CLEARANCE_IN else (
        (best[0] + best[1]) / 2)


def route(lay: Layout, u: str, v: str) -> list[tuple[float, float]]:
    """The polyline (inches) of the edge u -> v, ending on v's box edge: out of the nearer side
    of u's box, straight to the edge of u's column, across each column in between through a gap
    between its boxes (the one nearest the straight line), and into v's column. Within one
    column, the edge loops out to the right through the gap beside it."""
    cu, cv = lay.column[u], lay.column[v]
    right = {n: lay.left[n] + lay.widths[n] for n in (u, v)}
    if cu == cv:
        x = lay.columns[cu][1] + GAP_IN / 3
        return [(right[u], lay.y[u]), (x, lay.y[u]), (x, lay.y[v]), (right[v] + STUB_IN, lay.y[v]),
                (right[v], lay.y[v])]
    a, b = (u, v) if cu < cv else (v, u)
    ca, cb = lay.column[a], lay.column[b]
    ya, yb = lay.y[a], lay.y[b]
    x0, x1 = lay.columns[ca][1], lay.columns[cb][0]
    points = [(right[a], ya), (x0 + STUB_IN, ya)]
    top, bottom = TOP_IN - BOX_IN, lay.height - 0.2
    for c in range(ca + 1, cb):
        cl, cr, ys = lay.columns[c]
        # where the straight line from a to b would cross this column's middle
        t = ((cl + cr) / 2 - x0) / max(x1 - x0, 1e-9)
        at = _free_y(ys, ya + t * (yb - ya), top, bottom)
        points += [(cl - STUB_IN / 2, at), (cr + STUB_IN / 2, at)]
    points += [(x1 - STUB_IN, yb), (x1, yb)]
    return points if a == u else points[::-1]


def legend_entries(status_colours: dict[str, str],
                   relation_style: dict[str, tuple[str, float, float]],
                   verdict_colours: dict[str, str]) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Legend sections: (title, [(swatch kind "box" | "line", colour, text)])."""
    # a verdict colours the claim and the evidence edge alike: one entry says both, so no
    # colour stands twice in the legend
    shared = {s for s, c in status_colours.items() if c in verdict_colours.values()}
    return [
        ("claim (by status)", [("box", c, f"{s} (and its evidence edges)" if s in shared else s)
                               for s, c in status_colours.items()]),
        ("node", [("box", c, k) for k, c in KIND_COLOURS.items() if k != "claim"]),
        ("edge (arrow: from -> to)", [("line", c, r) for r, (c, _, _) in relation_style.items()]),
    ]


def text_colour(fill: str) -> str:
    """Black or white, whichever reads better on `fill` (#rrggbb)."""
    r, g, b = (int(fill[i : i + 2], 16) for i in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#ffffff"


def _edge_style(d: dict[str, Any], relation_style: dict[str, tuple[str, float, float]]
                ) -> tuple[str, float, float]:
    colour, alpha, width = relation_style.get(d["relation"], ("#999999", 0.7, 0.8))
    if d["relation"] in EVIDENCE_RELATIONS:
        colour, alpha, width = d.get("color", colour), 0.8, 1.0
    return colour, alpha, width


def positioned_dot(lay: Layout, sub: nx.DiGraph, legend: list[Any],
                   relation_style: dict[str, tuple[str, float, float]]) -> str:
    """DOT for `neato -n2`: every node at its layout position (points, y up), straight edges."""
    top = lay.height * 72

    def at(x: float, y: float) -> str:
        return f"{x * 72:.1f},{top - y * 72:.1f}!"

    out = [
        "digraph flopkb {",
        f'  graph [splines=line, outputorder=edgesfirst, bgcolor="white", '
        f'label={dot_quote(lay.title)}, labelloc=t, labeljust=l, fontsize=13, '
        f'fontname="Helvetica-Bold", bb="0,0,{lay.width * 72:.1f},{top:.1f}"];',
        f'  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize={FONT_PT}, '
        f'height={BOX_IN}, fixedsize=true, penwidth=0.5];',
        "  edge [dir=forward, arrowhead=normal, arrowsize=0.4];",
    ]
    for i, (name, x) in enumerate(lay.headers):
        # a left-justified label ("\l") in a fixed box whose left edge is the column's
        width = len(name) * CHAR_IN * 1.5
        out.append(f"  header{i} [shape=plaintext, style=solid, fontsize=10, "
                   f'fontname="Helvetica-Bold", label={dot_quote(name)[:-1]}\\l", '
                   f'width={width:.2f}, pos="{at(x + width / 2, TOP_IN - 0.3)}"];')
    for n, d in sorted(sub.nodes(data=True)):
        fill = d["fill"]
        attrs = [
            f"label={dot_quote(lay.labels[n])[:-1]}\\l\"",
            f"width={lay.widths[n]:.3f}",
            f'pos="{at(lay.left[n] + lay.widths[n] / 2, lay.y[n])}"',
            f'fillcolor="{fill}"',
            f'fontcolor="{text_colour(fill)}"',
            f"tooltip={dot_quote(d.get('title') or d.get('effect') or n)}",
        ]
        if n == lay.centre:
            attrs += ["penwidth=2", 'fontname="Helvetica-Bold"']
        out.append(f"  {dot_quote(n)} [{', '.join(attrs)}];")
    for u, v, d in lay.edges:
        colour, alpha, width = _edge_style(d, relation_style)
        rgba = f"{colour}{round(min(1.0, alpha) * 255):02x}"
        out.append(f'  {dot_quote(u)} -> {dot_quote(v)} [color="{rgba}", penwidth={width}, '
                   f'pos="{_spline(route(lay, u, v), top)}"];')
    # graphviz centres a node on its position: centre the legend table on its column's top
    rows = sum(1 + len(entries) for _, entries in legend)
    where = at(lay.legend_x + LEGEND_IN / 2 - 0.2, TOP_IN + rows * LEGEND_ROW_IN / 2)
    out.append(f'  legend [shape=plaintext, style=solid, fixedsize=false, pos="{where}", '
               f"label=<{_legend_html(legend)}>];")
    out.append("}")
    return "\n".join(out) + "\n"


def _spline(points: list[tuple[float, float]], top: float) -> str:
    """An edge `pos` for neato -n2: the polyline up to its last stub as straight cubic pieces
    (each piece's control points on its ends), the arrowhead from there to the end (`e,`)."""
    def pt(p: tuple[float, float]) -> str:
        return f"{p[0] * 72:.1f},{top - p[1] * 72:.1f}"

    body = points[:-1]
    parts = [pt(body[0])]
    for a, b in pairwise(body):
        parts += [pt(a), pt(b), pt(b)]
    return f"e,{pt(points[-1])} " + " ".join(parts)


def _legend_html(legend: list[Any]) -> str:
    rows = []
    for title, entries in legend:
        rows.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT"><B>{html.escape(title)}</B></TD></TR>')
        for shape, colour, text in entries:
            swatch = (f'<TD BGCOLOR="{colour}" WIDTH="12" HEIGHT="8" BORDER="1"> </TD>'
                      if shape == "box" else
                      f'<TD><FONT COLOR="{colour}">&#9473;&#9473;</FONT></TD>')
            rows.append(f'<TR>{swatch}<TD ALIGN="LEFT">{html.escape(text)}</TD></TR>')
    return ('<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="1" CELLPADDING="1">'
            + "".join(rows) + "</TABLE>")


def draw(lay: Layout, sub: nx.DiGraph, legend: list[Any],
         relation_style: dict[str, tuple[str, float, float]], out: Path) -> None:
    """Draw `lay` with matplotlib into `out` (.svg keeps text as text, .png at 150 dpi)."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

    fig = Figure(figsize=(lay.width, lay.height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, lay.width)
    ax.set_ylim(lay.height, 0)
    ax.set_axis_off()
    for u, v, d in lay.edges:
        colour, alpha, width = _edge_style(d, relation_style)
        points = route(lay, u, v)
        ax.plot([p[0] for p in points[:-1]], [p[1] for p in points[:-1]], color=colour,
                alpha=alpha, linewidth=width, zorder=1, solid_joinstyle="round")
        # the arrowhead on the last, straight stub, its tip on the box's edge
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>", mutation_scale=5,
                                     color=colour, alpha=min(1.0, alpha * 1.5 + 0.1),
                                     linewidth=width, shrinkA=0, shrinkB=0, zorder=1))
    for n, d in sub.nodes(data=True):
        bold = n == lay.centre
        # the same box graphviz draws: the column's left edge, the label's estimated width
        box = FancyBboxPatch((lay.left[n], lay.y[n] - BOX_IN / 2), lay.widths[n], BOX_IN,
                             boxstyle="round,pad=0,rounding_size=0.04", facecolor=d["fill"],
                             edgecolor="#000000" if bold else "#555555",
                             linewidth=1.6 if bold else 0.5, zorder=2)
        ax.add_patch(box)
        text = ax.text(lay.left[n] + 0.06, lay.y[n], lay.labels[n], fontsize=FONT_PT,
                       va="center_baseline", ha="left", color=text_colour(d["fill"]),
                       fontweight="bold" if bold else "normal", zorder=3)
        text.set_gid(n)
    for name, x in lay.headers:
        ax.text(x, TOP_IN - 0.3, name, fontsize=10, fontweight="bold", ha="left", va="center")
    ax.text(0.3, 0.25, lay.title, fontsize=13, fontweight="bold", ha="left", va="center")
    handles: list[Any] = []
    for title, entries in legend:
        handles.append(Patch(visible=False, label=title))
        for shape, colour, text in entries:
            if shape == "box":
                handles.append(Patch(facecolor=colour, edgecolor="#555555", label=text))
            else:
                handles.append(Line2D([0], [0], color=colour, linewidth=2, label=text))
    legend_box = ax.legend(handles=handles, loc="upper left", fontsize=FONT_PT, frameon=False,
                           bbox_to_anchor=(lay.legend_x / lay.width, 1 - TOP_IN / lay.height),
                           borderaxespad=0.0, handlelength=1.6)
    for handle, label in zip(legend_box.legend_handles, legend_box.get_texts(), strict=True):
        if handle is not None and not handle.get_visible():
            label.set_fontweight("bold")
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format=out.suffix.lstrip(".").lower(),
                    dpi=PNG_DPI if out.suffix.lower() == ".png" else 72)
