"""Serialise the dependency graph: node-link JSON, GraphML and Graphviz DOT, as text.

All three are deterministic (nodes and edges sorted) so that exports diff cleanly in git, and
well-formed whatever a record holds: JSON escapes it all, GraphML shows the characters XML 1.0
cannot hold as `\x01` text (the JSON export keeps them), DOT escapes quotes, backslashes and line
breaks and shows control and bidi characters escaped (it is drawn, so it shows what text does).
No line of any of them can be a CI workflow command (`flopkb.escape`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import networkx as nx

from flopkb.escape import escape_char, guard_json, visible
from flopkb.graph.build import KINDS

FORMATS = ("json", "graphml", "dot")

# Fill colours by node kind, shared with the renderer so the DOT export and the picture agree.
KIND_COLOURS = {
    "class": "#4c72b0",
    "claim": "#dddddd",
    "quantity": "#1b9e77",
    "accelerator": "#843c39",
    "source": "#542788",
    "evidence": "#a6761d",
    "architecture": "#0000e0",
}
KIND_SHAPES = {
    "class": "box",
    "claim": "note",
    "quantity": "ellipse",
    "accelerator": "box3d",
    "source": "folder",
    "evidence": "cds",
    "architecture": "component",
}


def _sorted_copy(g: nx.DiGraph) -> nx.DiGraph:
    out = nx.DiGraph()
    out.graph.update(g.graph)
    out.add_nodes_from(sorted(g.nodes(data=True)))
    out.add_edges_from(sorted(g.edges(data=True), key=lambda e: e[:2]))
    return out


def to_json(g: nx.DiGraph) -> str:
    """Node-link JSON (`networkx.node_link_data`, edges under "edges"); read back with
    `networkx.node_link_graph(data, edges="edges")`."""
    data = nx.node_link_data(_sorted_copy(g), edges="edges")
    return guard_json(json.dumps(data, indent=1, sort_keys=True, default=str)) + "\n"


# What XML 1.0 cannot hold at all, not even as a character reference: C0 but tab, LF and CR;
# lone surrogates; U+FFFE and U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: escape_char(m.group()), text)


def _scalar(value: Any) -> str | int | float | bool:
    if isinstance(value, str):
        return _xml_text(value)
    if isinstance(value, bool | int | float):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def to_graphml(g: nx.DiGraph) -> str:
    """GraphML. GraphML holds scalars only: None attributes are left out, lists and dicts are
    written as JSON strings (e.g. a claim's `conditions`)."""
    out = nx.DiGraph()
    out.add_nodes_from(
        (n, {k: _scalar(v) for k, v in d.items() if v is not None})
        for n, d in sorted(g.nodes(data=True))
    )
    out.add_edges_from(
        (u, v, {a: _scalar(x) for a, x in d.items() if x is not None})
        for u, v, d in sorted(g.edges(data=True), key=lambda e: e[:2])
    )
    # not generate_graphml: it splits the document with str.splitlines, which also breaks at
    # U+0085, U+2028, ... inside a value and so changes it
    xml = str(nx.GraphMLWriter(out, prettyprint=True))
    return _guard_xml(xml) + "\n"


def _guard_xml(xml: str) -> str:
    """Character references where a value would put a workflow command at a line start, or
    `##[` anywhere (an XML parser reads both back as written); CR as `&#13;`, which XML parsers
    would otherwise read as LF. The document's own line breaks are followed by `<` or blanks
    and `<`, never by `::`, and it has no CR."""
    xml = xml.replace("\r", "&#13;").replace("##[", "#&#35;[")
    return re.sub(r"\n(?=[ \t]*::)", "&#10;", xml)


def dot_quote(text: object) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, a line break (LF, CR or both)
    as DOT's `\\n`, control and bidi characters shown escaped (`\\x01`): graphviz copies them
    into the SVG, where XML forbids most of them."""
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return '"' + "\\n".join(_dot_text(line) for line in lines) + '"'


def _dot_text(line: str) -> str:
    return visible(line).replace("\\", "\\\\").replace('"', '\\"')


def to_dot(g: nx.DiGraph, rank_by_kind: bool = True) -> str:
    """Graphviz DOT: nodes styled by kind, edges labelled with their relation; with `rank_by_kind`
    nodes of one kind share a rank, so `dot` lays the graph out in layers by kind."""
    lines = [
        "digraph flopkb {",
        "  rankdir=LR; ranksep=1.2; nodesep=0.08; overlap=false; splines=true;",
        '  node [style=filled, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=7, color="#00000055"];',
    ]
    for n, d in sorted(g.nodes(data=True)):
        attrs = {
            "label": d.get("label", n),
            "shape": KIND_SHAPES.get(d.get("kind", ""), "ellipse"),
            "fillcolor": d.get("fill") or KIND_COLOURS.get(d.get("kind", ""), "#ffffff"),
            "kind": d.get("kind", ""),
            "tooltip": d.get("title") or d.get("effect") or n,
        }
        lines.append(f"  {dot_quote(n)} [{_attrs(attrs)}];")
    if rank_by_kind:
        for kind in KINDS:
            members = sorted(n for n, d in g.nodes(data=True) if d.get("kind") == kind)
            if members:
                lines.append("  { rank=same; " + " ".join(dot_quote(m) for m in members) + " }")
    for u, v, d in sorted(g.edges(data=True), key=lambda e: e[:2]):
        attrs = {"label": d.get("relation", "")}
        if d.get("color"):
            attrs["color"] = d["color"]
        lines.append(f"  {dot_quote(u)} -> {dot_quote(v)} [{_attrs(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _attrs(attrs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={dot_quote(v)}" for k, v in attrs.items())


WRITERS: dict[str, Callable[[nx.DiGraph], str]] = {
    "json": to_json,
    "graphml": to_graphml,
    "dot": to_dot,
}


def export(g: nx.DiGraph, fmt: str) -> str:
    """The graph as text in `fmt` (one of FORMATS)."""
    if fmt not in WRITERS:
        raise ValueError(f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    return WRITERS[fmt](g)
