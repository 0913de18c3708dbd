"""Build the dependency graph of hardware effects from a loaded knowledge base.

Nodes are keyed `<kind>:<id>` so that ids of different kinds never collide:
`class:mamba2-ssd`, `claim:mamba2-ssd/ssd-vs-fused-scan`, `quantity:hbm_bandwidth`,
`accelerator:h200-sxm`, `source:dao-gu-2024-ssd`, `evidence:<id>`. Every node carries `kind`,
`label` (the bare id) and `record` (the record that defines it; a claim's class record).

Edges (a `networkx.DiGraph`; each edge's `relation` attribute names it; docs/graph.md):

    class       -has->            claim
    claim       -depends_on->     quantity     (the row's quantity; `via: formula` for inputs of a
                                                derived row's formula)
    class       -affected_by->    accelerator
    quantity    -derived_from->   quantity     (computed quantity -> each input of its formula)
    accelerator -specifies->      quantity     (value, unit, note; value None = the part lacks it)
    claim       -cites->          source       (the row's source, `via: row`; the class's sources,
                                                `via: class`)
    evidence    -confirms | refutes | inconclusive_for | not_applicable_to | errored_on |
                 not_run_for->    claim        (verdict, timestamp)
    evidence    -ran_on->         accelerator
    class       -has_architecture-> architecture (the class's `architectures`)
    architecture -cites->         source       (`via: architecture`: the config and papers its
                                                values come from)
    architecture -depends_on->    quantity     (`via: roofline`: its decode bound moves with
                                                hbm_bandwidth and memory_capacity, its prefill
                                                bound with bf16_tensor_flops)
    claim       -computed_from->  architecture (a row's `derived_from`)

No two relations ever join the same ordered pair of nodes, so a DiGraph suffices (and builds
faster than a MultiDiGraph at 10^4 records); a second edge of the same pair keeps the first one
(a source cited by both the row and the class keeps `via: row`).

One edge beyond the claims': `accelerator -cites-> source` (`quantities`: the specs it backs),
so that a datasheet backing a spec is not an orphan and `affects SOURCE` reaches the claims it
moves. A spec is backed by its own `source` when it names one, else by the record's `sources`;
a record-level source whose specs all name their own keeps the edge with no quantities.
References that do not resolve are left out of the graph and listed in `graph.graph["dangling"]`
(the reference checks of `flopkb validate` report them; the graph never invents a node).
"""

from __future__ import annotations

import re
from typing import Any

import networkx as nx

from flopkb.kb import KnowledgeBase, gc_paused
from flopkb.model import (
    ArchitectureRecord,
    Verdict,
)

KINDS = ("class", "claim", "quantity", "accelerator", "source", "evidence", "architecture")
# the quantities an architecture's roofline bounds (flopkb.architecture.cost, bf16 default) are
# read from
ROOFLINE_INPUTS = ("bf16_tensor_flops", "hbm_bandwidth", "memory_capacity")

VERDICT_RELATION: dict[Verdict, str] = {
    Verdict.confirmed: "confirms",
    Verdict.refuted: "refutes",
    Verdict.inconclusive: "inconclusive_for",
    Verdict.not_applicable: "not_applicable_to",
    Verdict.error: "errored_on",
    Verdict.not_run: "not_run_for",
}
EVIDENCE_RELATIONS = frozenset(VERDICT_RELATION.values())


def node_id(kind: str, ident: str) -> str:
    """The graph key of a record (or claim) id: `quantity:hbm_bandwidth`."""
    return f"{kind}:{ident}"


def split_node(node: str) -> tuple[str, str]:
    """`quantity:hbm_bandwidth` -> (`quantity`, `hbm_bandwidth`)."""
    kind, _, ident = node.partition(":")
    return kind, ident


def build_graph(kb: KnowledgeBase) -> nx.DiGraph:
    """The dependency graph of `kb` (see the module docstring for nodes and edges)."""
    # The build allocates ~10^5 small dicts in one burst; with 10^4 loaded records alive, the
    # cyclic GC would rescan the whole heap several times meanwhile (half the build time at 10^4
    # records, measured). Nothing built here is a reference cycle, so collection can wait.
    with gc_paused():
        return _build(kb)


def _build(kb: KnowledgeBase) -> nx.DiGraph:
    classes, accelerators = dict(sorted(kb.classes.items())), dict(sorted(kb.accelerators.items()))
    quantities, sources = dict(sorted(kb.quantities.items())), dict(sorted(kb.sources.items()))
    evidence = dict(sorted(kb.evidence.items()))
    nodes: dict[str, dict[str, Any]] = {}
    # (u, v) -> attributes; nodes and edges are collected first and added to networkx in bulk.
    edges: dict[tuple[str, str], dict[str, Any]] = {}
    dangling: list[dict[str, str]] = []

    def edge(u: str, v: str, relation: str, **attrs: Any) -> None:
        if u not in nodes or v not in nodes:
            dangling.append({"source": u, "relation": relation, "target": v})
        elif (u, v) not in edges:
            edges[u, v] = {"relation": relation, **attrs}

    for qid, q in quantities.items():
        nodes[node_id("quantity", qid)] = {
            "kind": "quantity", "label": qid, "record": qid, "title": q.title, "unit": q.unit,
            "formula": q.formula, "computed": q.formula is not None,
        }  # fmt: skip
    for aid, a in accelerators.items():
        nodes[node_id("accelerator", aid)] = {
            "kind": "accelerator", "label": aid, "record": aid, "title": a.title,
            "vendor": a.vendor, "architecture": a.architecture,
        }  # fmt: skip
    for sid, src in sources.items():
        nodes[node_id("source", sid)] = {
            "kind": "source", "label": sid, "record": sid, "title": src.title,
            "source_type": src.source_type.value, "year": src.year, "identifier": src.identifier,
            "url": str(src.url) if src.url else None,
        }  # fmt: skip
    for cid, c in classes.items():
        nodes[node_id("class", cid)] = {
            "kind": "class", "label": cid, "record": cid, "title": c.title,
            "class_kind": c.kind.value,
        }  # fmt: skip
        for row in c.flop.hardware_parameters:
            nodes[node_id("claim", f"{cid}/{row.id}")] = {
                "kind": "claim", "label": f"{cid}/{row.id}", "record": cid, "row": row.id,
                "quantity": row.quantity, "magnitude": row.magnitude, "basis": row.basis.value,
                "effect": row.effect, "formula": row.formula, "conditions": dict(row.conditions),
                "experiment": row.verify.experiment if row.verify else None,
            }  # fmt: skip
    architectures = dict(sorted(kb.architectures.items()))
    for aid, arch in architectures.items():
        nodes[node_id("architecture", aid)] = {
            "kind": "architecture", "label": aid, "record": aid, "title": arch.title,
            "family": arch.family,
        }  # fmt: skip
    for eid, e in evidence.items():
        nodes[node_id("evidence", eid)] = {
            "kind": "evidence", "label": eid, "record": eid, "title": e.title, "claim": e.claim,
            "experiment": e.experiment, "accelerator": e.accelerator, "verdict": e.verdict.value,
            "timestamp": e.timestamp.isoformat(),
            "measured": e.measured.value if e.measured else None,
        }  # fmt: skip

    for qid, q in quantities.items():
        for name in sorted(_formula_names(q.formula)):
            edge(node_id("quantity", qid), node_id("quantity", name), "derived_from")
    for aid, a in accelerators.items():
        acc = node_id("accelerator", aid)
        backed: dict[str, list[str]] = {}
        for qid, spec in a.specs.items():
            edge(acc, node_id("quantity", qid), "specifies", value=spec.value, unit=spec.unit,
                 note=spec.note)  # fmt: skip
            if spec.source is not None:
                backed.setdefault(spec.source.id, []).append(qid)
        # A source of the whole record backs only the specs that name no source of their own:
        # a spec's own locator says exactly which datasheet its figure comes from, and letting
        # the record-level list back every spec would make `affects SOURCE` reach claims the
        # source says nothing about (a whitepaper cited for the SM count is not a bandwidth source).
        unsourced = sorted(qid for qid, spec in a.specs.items() if spec.source is None)
        for ref in a.sources:
            backed.setdefault(ref.id, []).extend(unsourced)
        for sid, qids in backed.items():
            # a spec read from the device cites the evidence that read it
            kind = "evidence" if sid in kb.evidence else "source"
            edge(acc, node_id(kind, sid), "cites", via="spec", quantities=sorted(set(qids)))
    for cid, c in classes.items():
        cls = node_id("class", cid)
        for aid in c.affected_by_hardware:
            edge(cls, node_id("accelerator", aid), "affected_by")
        for row in c.flop.hardware_parameters:
            claim = node_id("claim", f"{cid}/{row.id}")
            edge(cls, claim, "has")
            edge(claim, node_id("quantity", row.quantity), "depends_on", via="quantity")
            for name in sorted(_formula_names(row.formula) - {row.quantity}):
                edge(claim, node_id("quantity", name), "depends_on", via="formula")
            if row.source is not None:
                edge(claim, node_id("source", row.source.id), "cites", via="row",
                     locator=row.source.locator)  # fmt: skip
            for ref in c.sources:
                edge(claim, node_id("source", ref.id), "cites", via="class", locator=ref.locator)
    for cid, c in classes.items():
        for aid in c.architectures:
            edge(node_id("class", cid), node_id("architecture", aid), "has_architecture")
        for row in c.flop.hardware_parameters:
            if row.derived_from is not None:
                for aid in row.derived_from.architectures:
                    edge(node_id("claim", f"{cid}/{row.id}"), node_id("architecture", aid),
                         "computed_from", value=row.derived_from.value.value)  # fmt: skip
    for aid, arch in architectures.items():
        node = node_id("architecture", aid)
        for sid in sorted(architecture_sources(arch)):
            edge(node, node_id("source", sid), "cites", via="architecture")
        for qid in ROOFLINE_INPUTS:
            if node_id("quantity", qid) in nodes:
                edge(node, node_id("quantity", qid), "depends_on", via="roofline")
    for eid, e in evidence.items():
        ev = node_id("evidence", eid)
        if e.claim is not None:
            edge(ev, node_id("claim", e.claim), VERDICT_RELATION[e.verdict],
                 verdict=e.verdict.value, timestamp=e.timestamp.isoformat(),
                 implementation_sensitive=e.implementation_sensitive,
                 accelerator=e.accelerator)  # fmt: skip
        if e.accelerator is not None:
            edge(ev, node_id("accelerator", e.accelerator), "ran_on")

    g = nx.DiGraph(dangling=dangling)
    g.add_nodes_from(nodes.items())
    g.add_edges_from((u, v, d) for (u, v), d in edges.items())
    return g


# Formula inputs without building an AST: identifiers not glued to a number (`1e12` has no name).
# Only well-formed-looking text is read; whether a formula is inside the whitelist grammar is
# the formula checks' job (FKB401), and parsing thousands of formulas here would double the build.
_FORMULA_CHARS = re.compile(r"^[\w\s.+\-*/()]*$")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def _formula_names(text: str | None) -> frozenset[str]:
    """The quantity ids a formula names (none if it is missing or has foreign characters)."""
    if text is None or not _FORMULA_CHARS.match(text):
        return frozenset()
    return frozenset(_NAME.findall(text))


def architecture_sources(arch: ArchitectureRecord) -> set[str]:
    """Source ids an architecture record cites: its list, its layers' and each value's source."""
    refs = [*arch.sources, arch.layers.source, arch.parameters_source]
    for key in type(arch.config).model_fields:
        entry = getattr(arch.config, key)
        if entry is not None:
            refs.append(entry.source)
    return {ref.id for ref in refs if ref is not None}
