"""Draw the dependency graph as SVG or PNG, laid out in columns by kind, claims coloured by status.

Columns, left to right: sources | classes | claims | computed quantities | datasheet quantities |
accelerators | evidence. Within a column, nodes are ordered by the mean position of their
neighbours (a few barycentre sweeps), which keeps a class's claims together and next to the
quantities they depend on. The graphviz `dot` binary is used when it is on PATH (DOT text with one
rank per kind); otherwise matplotlib (the optional `flopkb[plot]` extra) draws the same layers.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import deque
from pathlib import Path
from typing import Any

import networkx as nx

from flopkb.atomic import atomic_path
from flopkb.graph.build import EVIDENCE_RELATIONS
from flopkb.graph.export import KIND_COLOURS, to_dot
from flopkb.graph.queries import KBGraph, latest_verdicts

SUFFIXES = (".svg", ".png")
COLUMNS = ("source", "class", "claim", "computed", "quantity", "accelerator", "evidence")
# Claim fill by status: the latest verdicts first (refuted anywhere wins), then the basis.
STATUS_COLOURS = {
    "refuted": "#d62728",
    "confirmed": "#2ca02c",
    "inconclusive": "#ff7f0e",
    "not applicable": "#bbbbbb",
    "unverified": "#ffffff",
    "cited": "#9ecae1",
    "derived": "#a1d99b",
    "measured": "#74c476",
}
VERDICT_COLOURS = {
    "confirmed": "#2ca02c",
    "refuted": "#d62728",
    "inconclusive": "#ff7f0e",
    "not-applicable": "#999999",
    "error": "#7f7f7f",
    "not-run": "#c7c7c7",
}
RELATION_STYLE = {  # colour, alpha, width: dependency edges strong, bookkeeping edges faint
    "has": ("#4c72b0", 0.5, 0.6),
    "depends_on": ("#333333", 0.6, 0.7),
    "derived_from": ("#55a868", 0.9, 1.2),
    "specifies": ("#c44e52", 0.18, 0.4),
    "affected_by": ("#c44e52", 0.08, 0.4),
    "cites": ("#8172b2", 0.25, 0.4),
    "ran_on": ("#ccb974", 0.4, 0.5),
}
# Relations followed transitively by --focus (what the node depends on and what depends on it).
DEPENDENCY = frozenset({"has", "depends_on", "derived_from"})


class RenderError(RuntimeError):
    """Neither graphviz nor matplotlib is available, or the drawing tool failed."""


def claim_status(kg: KBGraph, claim: str, not_applicable: bool = False) -> str:
    """The status a claim is coloured by (a key of STATUS_COLOURS)."""
    verdicts = {v["verdict"] for v in latest_verdicts(kg, claim).values()}
    for verdict in ("refuted", "confirmed", "inconclusive"):
        if verdict in verdicts:
            return verdict
    if not_applicable:
        return "not applicable"
    return kg.g.nodes[claim]["basis"]


def neighbourhood(g: nx.DiGraph, node: str) -> set[str]:
    """`node`, its direct neighbours, and everything it depends on or that depends on it through
    has, depends_on and derived_from (transitively)."""
    keep = {node, *g.predecessors(node), *g.successors(node)}
    for forward in (True, False):
        queue = deque([node])
        seen = {node}
        while queue:
            cur = queue.popleft()
            near = g.succ[cur] if forward else g.pred[cur]
            for nxt, d in near.items():
                if d["relation"] in DEPENDENCY and nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        keep |= seen
    return keep


def _column(d: dict[str, Any]) -> str:
    if d["kind"] == "quantity" and d.get("computed"):
        return "computed"
    return d["kind"]


def layered_positions(g: nx.DiGraph, sweeps: int = 4) -> dict[str, tuple[float, float]]:
    """x by kind column, y in [0, 1] by barycentre ordering within the column."""
    columns: dict[str, list[str]] = {c: [] for c in COLUMNS}
    for n, d in sorted(g.nodes(data=True)):
        columns[_column(d)].append(n)
    columns = {c: ns for c, ns in columns.items() if ns}
    undirected = g.to_undirected(as_view=True)
    y: dict[str, float] = {}

    def place() -> None:
        for ns in columns.values():
            for i, n in enumerate(ns):
                y[n] = (i + 0.5) / len(ns)

    place()
    for _ in range(sweeps):
        for ns in columns.values():

            def key(n: str, ns: list[str] = ns) -> tuple[float, float, str]:
                near = [y[m] for m in undirected.neighbors(n) if m not in ns]
                centre = sum(near) / len(near) if near else y[n]
                # claims stay grouped under their class: the class's row first, then barycentre
                owner = f"class:{g.nodes[n].get('record')}"
                first = y[owner] if g.nodes[n]["kind"] == "claim" and owner in y else centre
                return (first, centre, n)

            ns.sort(key=key)
        place()
    xs = {c: i for i, c in enumerate(columns)}
    return {n: (float(xs[c]), 1.0 - y[n]) for c, ns in columns.items() for n in ns}


def _styled(kg: KBGraph, nodes: set[str]) -> nx.DiGraph:
    """The subgraph on `nodes` with a `fill` per node and a `color` per evidence edge."""
    from flopkb.graph.queries import not_applicable

    na = not_applicable(kg)
    sub = nx.DiGraph(kg.g.subgraph(nodes))
    for n, d in sub.nodes(data=True):
        if d["kind"] == "claim":
            d["status"] = claim_status(kg, n, d["label"] in na)
            d["fill"] = STATUS_COLOURS[d["status"]]
        else:
            d["fill"] = KIND_COLOURS[d["kind"]]
    for _, _, d in sub.edges(data=True):
        if d["relation"] in EVIDENCE_RELATIONS:
            d["color"] = VERDICT_COLOURS.get(d.get("verdict", ""), "#999999")
    return sub


def render(
    kg: KBGraph, out: Path, focus: str | None = None, engine: str | None = None
) -> dict[str, Any]:
    """Draw the graph (or the neighbourhood of `focus`) to `out` (.svg or .png), atomically.

    `engine`: "graphviz", "matplotlib" or None (graphviz when `dot` is on PATH). Returns
    `{"out", "engine", "focus", "nodes", "edges"}`.
    """
    if out.suffix.lower() not in SUFFIXES:
        raise RenderError(f"expected an output file ending in .svg or .png, got {out.name!r}")
    centre = kg.resolve(focus) if focus else None
    nodes = neighbourhood(kg.g, centre) if centre else set(kg.g)
    sub = _styled(kg, nodes)
    if engine is None:
        engine = "graphviz" if shutil.which("dot") else "matplotlib"
    if engine not in {"graphviz", "matplotlib"}:
        raise RenderError(f"expected engine graphviz or matplotlib, got {engine!r}")
    with atomic_path(out) as tmp:
        if engine == "graphviz":
            _graphviz(sub, tmp)
        else:
            _matplotlib(sub, tmp, centre)
    return {
        "out": str(out),
        "engine": engine,
        "focus": centre,
        "nodes": sub.number_of_nodes(),
        "edges": sub.number_of_edges(),
    }


def _graphviz(sub: nx.DiGraph, tmp: Path) -> None:
    dot = shutil.which("dot")
    if dot is None:
        raise RenderError("graphviz `dot` is not on PATH")
    proc = subprocess.run(
        [dot, f"-T{tmp.suffix[1:].lower()}", "-o", str(tmp)],
        input=to_dot(sub).encode(),
        capture_output=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        raise RenderError(f"dot failed: {proc.stderr.decode(errors='replace').strip()[:300]}")


def _matplotlib(sub: nx.DiGraph, tmp: Path, centre: str | None) -> None:
    try:
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        raise RenderError(
            "rendering needs graphviz (`dot` on PATH) or matplotlib: pip install 'flopkb[plot]'"
        ) from None
    pos = layered_positions(sub)
    per_column: dict[float, int] = {}
    for x, _ in pos.values():
        per_column[x] = per_column.get(x, 0) + 1
    tallest = max(per_column.values(), default=1)
    ncols = max(len(per_column), 1)
    # About 0.16 in per node in the tallest column keeps 7-pt labels apart at ~300 nodes.
    fig = Figure(figsize=(max(8.0, 3.2 * ncols), max(6.0, 0.16 * tallest + 1.5)))
    ax = fig.add_axes((0.01, 0.01, 0.86, 0.94))
    ax.set_axis_off()
    for u, v, d in sub.edges(data=True):
        k = d["relation"]
        colour, alpha, width = RELATION_STYLE.get(k, (d.get("color", "#999999"), 0.7, 0.8))
        if k in EVIDENCE_RELATIONS:
            colour = d.get("color", colour)
        (x0, y0), (x1, y1) = pos[u], pos[v]
        ax.plot([x0, x1], [y0, y1], color=colour, alpha=alpha, linewidth=width, zorder=1)
    fontsize = 7 if tallest < 120 else 5
    for n, d in sub.nodes(data=True):
        x, yy = pos[n]
        label = d["label"].split("/", 1)[1] if d["kind"] == "claim" else d["label"]
        edge = "#000000" if n == centre else "#555555"
        ax.scatter(
            [x],
            [yy],
            s=40,
            color=d["fill"],
            edgecolors=edge,
            linewidths=1.6 if n == centre else 0.5,
            zorder=3,
        )
        ax.annotate(
            label,
            (x, yy),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=fontsize,
            va="center",
            ha="left",
            zorder=4,
            fontweight="bold" if n == centre else "normal",
        )
    for x in sorted(per_column):
        name = next(_column(d) for n, d in sub.nodes(data=True) if pos[n][0] == x)
        ax.text(
            x,
            1.02,
            name,
            fontsize=10,
            fontweight="bold",
            ha="left",
            va="bottom",
        )
    ax.set_xlim(-0.2, ncols - 0.2)
    ax.set_ylim(-0.02, 1.07)
    handles = [
        Patch(facecolor=c, edgecolor="#555555", label=f"claim: {s}")
        for s, c in STATUS_COLOURS.items()
    ]
    handles += [
        Patch(facecolor=c, edgecolor="#555555", label=k)
        for k, c in KIND_COLOURS.items()
        if k != "claim"
    ]
    handles += [
        Line2D([0], [0], color=c, alpha=min(1.0, a * 2), label=r)
        for r, (c, a, _) in RELATION_STYLE.items()
    ]
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, framealpha=0.9
    )
    title = f"flopkb dependency graph around {centre}" if centre else "flopkb dependency graph"
    fig.suptitle(
        f"{title} ({sub.number_of_nodes()} nodes, {sub.number_of_edges()} edges)", fontsize=11
    )
    fig.savefig(tmp, dpi=150 if tmp.suffix.lower() == ".png" else 72)
