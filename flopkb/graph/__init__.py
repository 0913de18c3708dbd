"""The dependency graph of hardware effects: build it, query it, export it, draw it.

kg = KBGraph.from_kb(kb)          # kb from flopkb.kb.load_kb
affects(kg, "hbm_bandwidth")      # claims and classes that move with HBM bandwidth
"""

from flopkb.graph.build import KINDS, build_graph, node_id, split_node
from flopkb.graph.queries import (
    GraphQueryError,
    KBGraph,
    UnknownIdError,
    affects,
    diff,
    latest_verdicts,
    not_applicable,
    path,
    status,
    what_if,
    why,
)

__all__ = [
    "KINDS",
    "GraphQueryError",
    "KBGraph",
    "UnknownIdError",
    "affects",
    "build_graph",
    "diff",
    "latest_verdicts",
    "node_id",
    "not_applicable",
    "path",
    "split_node",
    "status",
    "what_if",
    "why",
]
