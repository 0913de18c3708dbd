"""Draw the dependency graph as SVG or PNG, laid out in columns by kind, claims coloured by status.

Columns, left to right: sources | classes | claims | computed quantities | datasheet quantities |
accelerators | evidence. Within a column, nodes are ordered by the mean position of their
neighbours (a few barycentre sweeps), which keeps a class's claims together and next to the
quantities they depend on. `flopkb.graph.picture` turns that order into one layout (positions,
labels, legend column); graphviz draws it when `dot` is on PATH (`neato -n2`: positions kept),
otherwise matplotlib (the optional `flopkb[plot]` extra) draws the very same layout.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import Any

import networkx as nx

from flopkb import budget
from flopkb.atomic import atomic_path
from flopkb.extras import install_hint
from flopkb.graph import picture
from flopkb.graph.build import EVIDENCE_RELATIONS
from flopkb.graph.export import KIND_COLOURS
from flopkb.graph.queries import KBGraph, latest_verdicts, not_applicable

SUFFIXES = (".svg", ".png")
PNG_DPI = picture.PNG_DPI
COLUMNS = (
    "source", "architecture", "class", "claim", "computed", "quantity", "accelerator", "evidence"
)
# Claim fill by status: the latest verdicts first (refuted anywhere wins), then the basis. Every
# colour of the legend (these, the node kinds of export.KIND_COLOURS, the relations below) is a
# different one, far apart in CIELAB (a test checks): one colour never means two things.
STATUS_COLOURS = {
    "refuted": "#d62728",
    # runs on one part gave different verdicts (flopkb.evidence.pooled): neither a confirmation nor
    # a refutation to colour it by
    "disagreeing": "#17becf",
    "confirmed": "#2ca02c",
    "inconclusive": "#ff7f0e",
    "not applicable": "#bbbbbb",
    "unverified": "#ffffff",
    "cited": "#9ecae1",
    "derived": "#fdd0a2",
    "measured": "#ffed6f",
}
# an evidence edge takes its verdict's claim colour (one legend entry says both)
VERDICT_COLOURS = {
    "confirmed": STATUS_COLOURS["confirmed"],
    "refuted": STATUS_COLOURS["refuted"],
    "inconclusive": STATUS_COLOURS["inconclusive"],
    "not-applicable": STATUS_COLOURS["not applicable"],
    "error": "#7f7f7f",
    "not-run": "#c7c7c7",
}
RELATION_STYLE = {  # colour, alpha, width: dependency edges strong, bookkeeping edges faint
    "has": ("#bc80bd", 0.7, 0.6),
    "depends_on": ("#000000", 0.6, 0.7),
    "derived_from": ("#e7298a", 0.9, 1.2),
    "specifies": ("#fb8072", 0.3, 0.4),
    "affected_by": ("#636363", 0.12, 0.4),
    "cites": ("#637939", 0.3, 0.4),
    "ran_on": ("#00441b", 0.4, 0.5),
    "has_architecture": ("#e000e0", 0.6, 0.6),
    "computed_from": ("#00e000", 0.9, 1.0),
}
# Relations followed transitively by --focus (what the node depends on and what depends on it).
DEPENDENCY = frozenset({"has", "depends_on", "derived_from"})


class RenderError(RuntimeError):
    """Neither graphviz nor matplotlib is available, or the drawing tool failed."""


class PictureTooLarge(RenderError):
    """The picture would pass a limit of `flopkb.budget` (canvas pixels, nodes and edges): a
    refusal because of what the KB holds, so the CLI exits 1, not 2."""


def check_items(engine: str, nodes: int, edges: int) -> None:
    """Refuse, before the layout, a graph with more nodes and edges than `engine` may draw."""
    cap = budget.PICTURE_MAX_ITEMS[engine]
    if nodes + edges > cap:
        other = " or graphviz (`dot` on PATH)" if engine == "matplotlib" else ""
        raise PictureTooLarge(
            f"the graph has {nodes:,} nodes and {edges:,} edges, over the {cap:,} {engine} "
            f"draws: draw a part with --focus ID{other}, or export it (graph export --format dot)"
        )


def check_canvas(lay: picture.Layout, suffix: str, nodes: int) -> None:
    """Refuse, before drawing, a PNG whose canvas would pass the budget's pixel limits."""
    if suffix == ".png":
        w, h = round(lay.width * PNG_DPI), round(lay.height * PNG_DPI)
        if w * h > budget.PICTURE_MAX_PIXELS or max(w, h) > budget.PICTURE_MAX_SIDE_PX:
            raise PictureTooLarge(
                f"the PNG would be {w:,} x {h:,} px ({nodes:,} nodes), over the limit of "
                f"{budget.PICTURE_MAX_PIXELS:,} px and {budget.PICTURE_MAX_SIDE_PX:,} px a side: "
                "write .svg, or draw a part with --focus ID"
            )


def claim_status(kg: KBGraph, claim: str, not_applicable: bool = False) -> str:
    """The status a claim is coloured by (a key of STATUS_COLOURS)."""
    verdicts = {v["verdict"] for v in latest_verdicts(kg, claim).values()}
    for verdict in ("refuted", "disagreeing", "confirmed", "inconclusive"):
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

    `engine`: "graphviz", "matplotlib" or None (graphviz when `dot` is on PATH: it draws large
    graphs in seconds). A picture over `budget`'s limits (PNG canvas, nodes and edges per engine)
    raises PictureTooLarge before anything is drawn. Returns
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
    check_items(engine, sub.number_of_nodes(), sub.number_of_edges())
    lay, legend = _picture(sub, centre)
    check_canvas(lay, out.suffix.lower(), sub.number_of_nodes())
    with atomic_path(out) as tmp:
        if engine == "graphviz":
            _graphviz(sub, tmp, lay, legend)
        else:
            _matplotlib(sub, tmp, lay, legend)
    return {
        "out": str(out),
        "engine": engine,
        "focus": centre,
        "nodes": sub.number_of_nodes(),
        "edges": sub.number_of_edges(),
    }


def _picture(sub: nx.DiGraph, centre: str | None) -> tuple[picture.Layout, list[Any]]:
    """The one layout and legend both engines draw."""
    columns = {n: _column(d) for n, d in sub.nodes(data=True)}
    lay = picture.layout(sub, layered_positions(sub), centre, columns)
    return lay, picture.legend_entries(STATUS_COLOURS, RELATION_STYLE, VERDICT_COLOURS)


def _graphviz(sub: nx.DiGraph, tmp: Path, lay: picture.Layout, legend: list[Any]) -> None:
    dot = shutil.which("dot")
    if dot is None:
        raise RenderError("graphviz `dot` is not on PATH")
    # neato -n2 keeps the positions given: the same layout as the matplotlib drawing
    args = [dot, "-Kneato", "-n2", f"-Gdpi={PNG_DPI}" if tmp.suffix.lower() == ".png" else
            "-Gdpi=72", f"-T{tmp.suffix[1:].lower()}", "-o", str(tmp)]
    data = picture.positioned_dot(lay, sub, legend, RELATION_STYLE).encode()
    returncode, stderr = _run_child(args, data, timeout=300)
    if returncode != 0:
        raise RenderError(f"dot failed: {stderr.decode(errors='replace').strip()[:300]}")


# Signals the CLI turns into exceptions (flopkb.cli.interrupts): held while the child starts
_HELD = (signal.SIGINT, signal.SIGTERM)


def _run_child(args: list[str], data: bytes, timeout: float) -> tuple[int, bytes]:
    """Run `args` with `data` on stdin; the child never outlives an exception here. A signal
    that arrives while Popen is still starting the child (after the fork, before Popen returns:
    a window a loaded machine widens) would raise where nothing holds the child's pid, and leave
    it running. So SIGINT / SIGTERM are deferred while Popen runs: their Python handlers (which
    always run in the main thread, whichever thread the process-directed signal reached; a
    signal mask would only cover this thread) just note the signal, and once `proc` is bound the
    noted signals are raised again, where an exception kills the child before it propagates."""
    noted: list[int] = []
    saved: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in _HELD:
            # None: a handler not set from Python, which signal.signal could not put back
            if signal.getsignal(signum) is not None:
                saved[signum] = signal.signal(signum, lambda n, _frame: noted.append(n))

    def undefer() -> None:
        """The handlers back, then the signals noted meanwhile raised again, in order."""
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        saved.clear()
        for signum in dict.fromkeys(noted):
            signal.raise_signal(signum)

    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
    except BaseException:
        undefer()
        raise
    with proc:
        try:
            # inside the try: a signal noted or arriving from here on kills the child
            undefer()
            _, stderr = proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise RenderError(f"dot took longer than {timeout:.0f} s") from None
        except BaseException:
            proc.kill()
            raise
    return proc.returncode, stderr


def _matplotlib(sub: nx.DiGraph, tmp: Path, lay: picture.Layout, legend: list[Any]) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RenderError(
            f"rendering needs graphviz (`dot` on PATH) or matplotlib: {install_hint('plot')}"
        ) from None
    picture.draw(lay, sub, legend, RELATION_STYLE, tmp)
