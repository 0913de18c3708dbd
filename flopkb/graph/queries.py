"""Questions asked of the dependency graph: affects, why, diff, what-if, path, status.

Every query returns plain JSON-ready data (dicts, lists, strings, numbers, None): the CLI prints it
as is with `--format json`, and renders it as trees and tables for people. Claim, class and record
ids in answers are bare (`mamba2-ssd/ssd-vs-fused-scan`); graph paths name nodes by their graph key
(`quantity:hbm_bandwidth`) and give each edge as `{"source", "relation", "target"}` in its stored
direction, so a path reads as "claim depends_on ridge_point_bf16 derived_from hbm_bandwidth".
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from flopkb.architecture.show import DEFAULT_CONTEXT, roofline_changes
from flopkb.claims import not_verifiable
from flopkb.evidence.hashing import stale_evidence
from flopkb.evidence.pooled import pooled
from flopkb.grammar.formula import FormulaError, parse_formula
from flopkb.grammar.text import ascii_digits, foreign_digits
from flopkb.graph.build import KINDS, build_graph, node_id, split_node
from flopkb.graph.values import PartValues, Value, ratio
from flopkb.hardware.model import HardwareModel
from flopkb.hardware.show import hw_compare
from flopkb.kb import KnowledgeBase
from flopkb.model import QuantityRecord

Edge = dict[str, str]
# Verdicts that say something about the number; error, not-run and not-applicable runs do not.


class GraphQueryError(ValueError):
    """A query that cannot be answered as asked (wrong kind of id, bad value): one clear line."""


class UnknownIdError(GraphQueryError):
    """An id that names no node; `suggestions` holds the closest known ids."""

    def __init__(self, text: str, suggestions: list[str], kinds: Iterable[str] = KINDS) -> None:
        self.text = text
        self.suggestions = suggestions
        what = " or ".join(kinds)
        hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
        super().__init__(f"unknown {what} id {text!r}{hint}")


@dataclass
class KBGraph:
    """A knowledge base with its dependency graph, built once and queried many times."""

    kb: KnowledgeBase
    g: nx.DiGraph
    _model: HardwareModel | None = None
    _parts: dict[str, PartValues] = field(default_factory=dict)
    _closures: dict[str, frozenset[str]] = field(default_factory=dict)
    _nulls: dict[str, frozenset[str]] | None = None

    @classmethod
    def from_kb(cls, kb: KnowledgeBase) -> KBGraph:
        return cls(kb, build_graph(kb))

    @property
    def model(self) -> HardwareModel:
        """flopkb.hardware's model of the KB, built on first use (affects does not need it)."""
        if self._model is None:
            self._model = HardwareModel(self.kb)
        return self._model

    @property
    def _quantities(self) -> dict[str, QuantityRecord]:
        return self.model.quantities

    def resolve(self, text: str, kinds: Iterable[str] = KINDS) -> str:
        """The graph key of a bare or prefixed id, restricted to `kinds`; UnknownIdError if none."""
        kinds = tuple(kinds)
        kind, sep, _ = text.partition(":")
        if sep and kind in KINDS:
            candidates = [text] if text in self.g else []
        elif "/" in text:
            candidates = [node_id("claim", text)] if node_id("claim", text) in self.g else []
        else:
            candidates = [node_id(k, text) for k in KINDS if node_id(k, text) in self.g]
        if not candidates:
            labels = sorted({d["label"] for _, d in self.g.nodes(data=True) if d["kind"] in kinds})
            raise UnknownIdError(
                text, difflib.get_close_matches(text, labels, n=3, cutoff=0.6), kinds
            )
        wanted = [c for c in candidates if split_node(c)[0] in kinds]
        if not wanted:
            found = split_node(candidates[0])[0]
            raise GraphQueryError(f"{text!r} is a {found}; expected a {' or '.join(kinds)} id")
        return wanted[0]

    def values(self, accelerator: str) -> PartValues:
        """Quantity values on an accelerator (bare id), evaluated lazily and cached."""
        if accelerator not in self._parts:
            record = self.kb.records[accelerator]
            self._parts[accelerator] = PartValues(self.model, record, self._quantities)  # type: ignore[arg-type]
        return self._parts[accelerator]

    def inputs(self, quantity: str) -> frozenset[str]:
        """Bare ids: `quantity` and every quantity it is computed from, transitively (memoised)."""
        if quantity not in self._closures:
            self._closures[quantity] = frozenset()  # cut cycles (FKB403 reports them)
            node = node_id("quantity", quantity)
            below = {quantity}
            if node in self.g:
                for i, _ in self.out_by(node, "derived_from"):
                    below |= self.inputs(_bare(i))
            self._closures[quantity] = frozenset(below)
        return self._closures[quantity]

    def null_specs(self, accelerator: str) -> frozenset[str]:
        """Bare ids of the quantities an accelerator (bare id) lists as null: features it lacks."""
        if self._nulls is None:
            self._nulls = {}
            for node, data in self.g.nodes(data=True):
                if data["kind"] == "accelerator":
                    self._nulls[data["label"]] = frozenset(
                        _bare(q) for q, d in self.out_by(node, "specifies") if d["value"] is None
                    )
        return self._nulls.get(accelerator, frozenset())

    def out_by(self, node: str, relation: str) -> list[tuple[str, dict[str, Any]]]:
        return [(v, d) for v, d in self.g.succ[node].items() if d["relation"] == relation]

    def in_by(self, node: str, relation: str) -> list[tuple[str, dict[str, Any]]]:
        return [(u, d) for u, d in self.g.pred[node].items() if d["relation"] == relation]


def _edge(u: str, relation: str, v: str) -> Edge:
    return {"source": u, "relation": relation, "target": v}


def _bare(node: str) -> str:
    return split_node(node)[1]


def _dependents(kg: KBGraph, quantity: str) -> tuple[dict[str, list[Edge]], dict[str, list[Edge]]]:
    """Quantities computed from `quantity` (transitively) and the claims that depend on any of them.

    Returns (quantity node -> edges from it down to `quantity`, claim node -> edges from the claim
    down to `quantity`); breadth-first, so each path is a shortest one.
    """
    down: dict[str, list[Edge]] = {quantity: []}
    queue = deque([quantity])
    while queue:
        cur = queue.popleft()
        for pred, _ in kg.in_by(cur, "derived_from"):
            if pred not in down:
                down[pred] = [_edge(pred, "derived_from", cur), *down[cur]]
                queue.append(pred)
    claims: dict[str, list[Edge]] = {}
    for q, path in down.items():
        for claim, _ in kg.in_by(q, "depends_on"):
            # architectures depend on quantities too (their roofline bounds): not claims
            if split_node(claim)[0] != "claim":
                continue
            if claim not in claims or len(path) + 1 < len(claims[claim]):
                claims[claim] = [_edge(claim, "depends_on", q), *path]
    return down, claims


def _owner(kg: KBGraph, claim: str) -> str:
    return node_id("class", kg.g.nodes[claim]["record"])


def affects(kg: KBGraph, ident: str, via_specs: bool = True) -> dict[str, Any]:
    """Every claim and class that depends on a quantity, accelerator or source, with the path.

    quantity: claims depending on it or on a quantity computed from it (transitively).
    accelerator: claims of the classes affected by it, plus (`via_specs`) claims depending on a
        quantity it specifies with a value (a null spec moves nothing).
    source: claims citing it, plus claims that depend, on a part whose (non-null) spec it backs,
        on that spec's quantity (only for classes affected by that part).
    """
    node = kg.resolve(ident, ("quantity", "accelerator", "source"))
    kind = split_node(node)[0]
    paths: dict[str, list[Edge]] = {}
    quantities: set[str] = set()
    classes: set[str] = set()

    def take(
        found: Mapping[str, list[Edge]], tail: list[Edge], only: set[str] | None = None
    ) -> None:
        for claim, path in found.items():
            if only is not None and _owner(kg, claim) not in only:
                continue
            if claim not in paths or len(path) + len(tail) < len(paths[claim]):
                paths[claim] = [*path, *tail]

    if kind == "quantity":
        down, found = _dependents(kg, node)
        quantities |= set(down) - {node}
        take(found, [])
    elif kind == "accelerator":
        for cls, _ in kg.in_by(node, "affected_by"):
            classes.add(cls)
            for claim, _ in kg.out_by(cls, "has"):
                take({claim: [_edge(cls, "has", claim), _edge(cls, "affected_by", node)]}, [])
        if via_specs:
            for q, data in kg.out_by(node, "specifies"):
                if data.get("value") is not None:
                    down, found = _dependents(kg, q)
                    quantities |= set(down) - {q}
                    take(found, [_edge(node, "specifies", q)])
    else:
        for claim, _ in kg.in_by(node, "cites"):
            if split_node(claim)[0] == "claim":
                take({claim: [_edge(claim, "cites", node)]}, [])
        for acc, data in kg.in_by(node, "cites"):
            if split_node(acc)[0] != "accelerator":
                continue
            affected = {c for c, _ in kg.in_by(acc, "affected_by")}
            for qid in data.get("quantities", []):
                q = node_id("quantity", qid)
                # a null spec (the part lacks the feature) moves nothing, as for `affects ACC`
                if q not in kg.g or kg.g[acc][q].get("value") is None:
                    continue
                down, found = _dependents(kg, q)
                tail = [_edge(acc, "specifies", q), _edge(acc, "cites", node)]
                before = set(paths)
                take(found, tail, only=affected)
                if set(paths) != before:
                    quantities |= set(down) - {q}
    classes |= {_owner(kg, c) for c in paths}
    # architectures whose roofline bounds (tokens/s, largest batch) move with a quantity
    moved = {node, *quantities} if kind == "quantity" else set()
    architectures = sorted(
        {_bare(a) for q in moved for a, _ in kg.in_by(q, "depends_on")
         if split_node(a)[0] == "architecture"}
    )  # fmt: skip
    return {
        "id": _bare(node),
        "kind": kind,
        "claims": sorted(_bare(c) for c in paths),
        "architectures": architectures,
        "classes": sorted(_bare(c) for c in classes),
        "quantities": sorted(_bare(q) for q in quantities),
        "paths": {_bare(c): paths[c] for c in sorted(paths)},
    }


def latest_verdicts(kg: KBGraph, claim: str) -> dict[str, dict[str, Any]]:
    """accelerator id -> `claim`'s pooled verdict there (`flopkb.evidence.pooled`: every trusted,
    fresh run; `disagreeing` when they differ): `{"verdict", "text", "evidence", "timestamp",
    "implementation_sensitive", "sensitive_evidence", "pooled", "pooled_text", "runs"}`,
    `evidence` and `timestamp` the newest run's, `sensitive_evidence` the runs whose flag counts,
    `pooled` the runs' rounds merged and judged again (flopkb.evidence.pooled.Figure); evidence
    naming no accelerator keys as "?".
    """
    out: dict[str, dict[str, Any]] = {}
    for (_, acc), p in pooled(kg.kb, _bare(claim)).items():
        newest = p.runs[0]
        out["?" if acc == "unknown-gpu" else acc] = {
            "verdict": p.verdict,
            "text": p.text(),
            "evidence": newest.id,
            "timestamp": newest.timestamp.isoformat().replace("+00:00", "Z"),
            "implementation_sensitive": p.implementation_sensitive,
            "sensitive_evidence": [ev.id for ev in p.sensitive_runs],
            "pooled": p.figure.as_dict() if p.figure else None,
            "pooled_text": p.figure.text() if p.figure else None,
            "runs": p.as_dict()["per_run"],
        }
    return {acc: out[acc] for acc in sorted(out)}


def _claim_quantities(kg: KBGraph, claim: str) -> list[str]:
    """Bare ids of the quantities a claim depends on directly (its quantity, formula inputs)."""
    return sorted(_bare(q) for q, _ in kg.out_by(claim, "depends_on"))


def _not_applicable_on(kg: KBGraph, claim: str, accelerators: Iterable[str]) -> list[str]:
    """Accelerators (bare ids) where a quantity the claim depends on, or an input it is computed
    from, is null: the part lacks the feature (a missing figure is unknown, not inapplicable)."""
    depends: frozenset[str] = frozenset()
    for q in _claim_quantities(kg, claim):
        depends |= kg.inputs(q)
    return [acc for acc in accelerators if kg.null_specs(acc) & depends]


def not_applicable(kg: KBGraph) -> dict[str, list[str]]:
    """claim id -> accelerators of its class's `affected_by_hardware` where it does not apply."""
    out: dict[str, list[str]] = {}
    # once per class: a class node's successors include all its claims (O(claims^2) otherwise)
    accs_of: dict[str, list[str]] = {}
    for claim, data in sorted(kg.g.nodes(data=True)):
        if data["kind"] != "claim":
            continue
        cls = _owner(kg, claim)
        if cls not in accs_of:
            accs_of[cls] = sorted(_bare(a) for a, _ in kg.out_by(cls, "affected_by"))
        na = _not_applicable_on(kg, claim, accs_of[cls])
        if na:
            out[_bare(claim)] = na
    return out


def _inputs_closure(kg: KBGraph, quantities: Iterable[str]) -> list[str]:
    """The quantities (bare ids) and, breadth-first, every input they are computed from."""
    seen: list[str] = []
    queue = deque(quantities)
    while queue:
        q = queue.popleft()
        if q in seen:
            continue
        seen.append(q)
        queue.extend(_bare(i) for i, _ in kg.out_by(node_id("quantity", q), "derived_from"))
    return seen


def why(kg: KBGraph, class_id: str, on: str | None = None) -> dict[str, Any]:
    """What moves a class's cost: its claims' quantities and their inputs, valued on `on` (or on
    every part the class is affected by), and the claims with magnitude, basis and verdicts."""
    cls = kg.resolve(class_id, ("class",))
    affected = [_bare(a) for a, _ in kg.out_by(cls, "affected_by")]
    accs = [_bare(kg.resolve(on, ("accelerator",)))] if on else sorted(affected)
    claims = sorted(c for c, _ in kg.out_by(cls, "has"))
    direct: dict[str, list[str]] = {}
    for claim in claims:
        for q in _claim_quantities(kg, claim):
            direct.setdefault(q, []).append(_bare(claim))
    quantities = []
    for qid in _inputs_closure(kg, sorted(direct)):
        q = node_id("quantity", qid)
        data = kg.g.nodes[q] if q in kg.g else {}
        quantities.append(
            {
                "id": qid,
                "unit": data.get("unit"),
                "formula": data.get("formula"),
                "inputs": sorted(_bare(i) for i, _ in kg.out_by(q, "derived_from")) if data else [],
                "claims": direct.get(qid, []),
                "values": {acc: kg.values(acc).get(qid).as_dict() for acc in accs},
            }
        )
    rows = []
    for claim in claims:
        data = kg.g.nodes[claim]
        rows.append(
            {
                "claim": _bare(claim),
                "quantity": data["quantity"],
                "depends_on": _claim_quantities(kg, claim),
                "magnitude": data["magnitude"],
                "basis": data["basis"],
                "effect": data["effect"],
                "verdicts": {a: v["verdict"] for a, v in latest_verdicts(kg, claim).items()},
                "not_applicable_on": _not_applicable_on(kg, claim, accs),
            }
        )
    node = kg.g.nodes[cls]
    return {
        "class": _bare(cls),
        "title": node["title"],
        "on": accs[0] if on else None,
        "affected": (accs[0] in affected) if on else None,
        "accelerators": accs,
        "quantities": quantities,
        "claims": rows,
    }


def diff(kg: KBGraph, a: str, b: str) -> dict[str, Any]:
    """What differs from part `a` to part `b`.

    `flopkb.hardware.show.hw_compare` gives every quantity (computed ones included), ratio b/a,
    and the claims depending on a differing quantity; the graph adds, per differing quantity,
    the claims that depend on it (directly or through computed quantities) and the classes of
    all those claims.
    """
    na, nb = (_bare(kg.resolve(x, ("accelerator",))) for x in (a, b))
    result = hw_compare(kg.kb, na, nb, kg.model)
    # hw_compare already names, per dependent claim, the differing inputs it goes `via`
    for row in result["quantities"]:
        row["claims"] = sorted(c["claim"] for c in result["claims"] if row["quantity"] in c["via"])
    result["classes"] = sorted({c["claim"].split("/", 1)[0] for c in result["claims"]})
    return result


def parse_settings(items: Iterable[str]) -> dict[str, float]:
    """`QUANTITY=VALUE` strings -> {quantity: value}; GraphQueryError on a malformed item, a
    value that is not a finite number (nan, inf) or one not written in ASCII digits."""
    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            value = float(text)
        except ValueError:
            raise GraphQueryError(f"expected QUANTITY=NUMBER, got {item!r}") from None
        foreign = foreign_digits(text)
        if foreign is not None:
            # float() reads every script's digits; a figure is ASCII here as in the records
            raise GraphQueryError(
                f"expected ASCII digits 0-9, got {foreign.describe()} in {item!r} (it reads as "
                f"{ascii_digits(text.strip())!r})"
            )
        if not math.isfinite(value):
            raise GraphQueryError(f"expected a finite number, got {item!r}")
        out[name.strip()] = value
    return out


# Rates (TFLOP/s, TOPS, TB/s, B/s), sizes (B, KB, KiB, GB) and counts: zero or less is no hardware.
_POSITIVE_UNIT = re.compile(r".+/s|[kKMGTPE]?i?B|[kKMGTPE]?(?:FLOPS|OPS)|count")


def _positive_only(unit: str | None) -> bool:
    return unit is not None and _POSITIVE_UNIT.fullmatch(unit.strip()) is not None


def check_setting(kg: KBGraph, quantity: str, value: float) -> None:
    """GraphQueryError unless `value` can stand for datasheet quantity `quantity` (a node id)."""
    if not math.isfinite(value):
        raise GraphQueryError(f"{_bare(quantity)}: expected a finite number, got {value}")
    unit = kg.g.nodes[quantity].get("unit")
    if _positive_only(unit) and value <= 0:
        raise GraphQueryError(
            f"{_bare(quantity)} is a rate, size or count ({unit}): expected a positive number, "
            f"got {value:g}"
        )


def what_if(
    kg: KBGraph,
    accelerator: str,
    settings: Mapping[str, float],
    context: int | None = None,
    batch: int = 1,
) -> dict[str, Any]:
    """Override datasheet values on a part, recompute the computed quantities, and list what moves:
    each changed quantity with its ratio (after/before), each claim depending on one, and each
    architecture's roofline bounds (tokens/s, largest batch) at `context` and `batch`."""
    acc = _bare(kg.resolve(accelerator, ("accelerator",)))
    overrides: dict[str, float] = {}
    for name, value in settings.items():
        q = kg.resolve(name, ("quantity",))
        if kg.g.nodes[q].get("computed"):
            inputs = ", ".join(sorted(_bare(i) for i, _ in kg.out_by(q, "derived_from")))
            raise GraphQueryError(
                f"{_bare(q)} is computed ({kg.g.nodes[q]['formula']}); set {inputs}"
            )
        check_setting(kg, q, value)
        overrides[_bare(q)] = value
    before = kg.values(acc).all()
    record = kg.kb.records[acc]
    after = PartValues(kg.model, record, kg._quantities, overrides).all()  # type: ignore[arg-type]
    moved = []
    for qid in sorted(after):
        x, y = before.get(qid, Value(None, "missing")), after[qid]
        if x.value == y.value and x.status.replace("override", "spec") == y.status.replace(
            "override", "spec"
        ):
            continue
        q = node_id("quantity", qid)
        moved.append(
            {
                "id": qid,
                "computed": bool(kg.g.nodes[q].get("computed")) if q in kg.g else False,
                "before": x.value,
                "after": y.value,
                "before_status": x.status,
                "after_status": y.status,
                "ratio": ratio(x.value, y.value),
            }
        )
    by_id = {m["id"]: m for m in moved}
    affected = {_bare(c) for c, _ in kg.in_by(node_id("accelerator", acc), "affected_by")}
    claims = []
    for claim, data in sorted(kg.g.nodes(data=True)):
        if data["kind"] != "claim":
            continue
        via = [q for q in _claim_quantities(kg, claim) if q in by_id]
        if not via:
            continue
        claims.append(
            {
                "claim": _bare(claim),
                "quantity": data["quantity"],
                "via": via,
                "ratio": ratio(_claim_value(before, data), _claim_value(after, data)),
                "affected": data["record"] in affected,
            }
        )

    def datasheet(values: Mapping[str, Value]) -> dict[str, float | None]:
        return {q: v.value for q, v in values.items()}

    architectures = roofline_changes(
        kg.kb, acc, datasheet(before), datasheet(after), context or DEFAULT_CONTEXT, batch
    )
    return {
        "accelerator": acc, "set": overrides, "quantities": moved, "claims": claims,
        "architectures": architectures,
    }  # fmt: skip


def _claim_value(values: Mapping[str, Value], claim: Mapping[str, Any]) -> float | None:
    """What a claim's figure scales with: its formula (basis derived), else its quantity."""
    if claim.get("formula"):
        try:
            formula = parse_formula(claim["formula"])
            return formula.evaluate({n: values[n].value for n in formula.names if n in values})
        except FormulaError:
            return None
    value = values.get(claim["quantity"])
    return None if value is None else value.value


def path(kg: KBGraph, a: str, b: str) -> dict[str, Any]:
    """The shortest path between two nodes, ignoring direction; edges in their stored direction."""
    u, v = kg.resolve(a), kg.resolve(b)
    try:
        nodes = nx.shortest_path(kg.g.to_undirected(as_view=True), u, v)
    except nx.NetworkXNoPath:
        return {"from": u, "to": v, "nodes": None, "edges": None, "length": None}
    edges = []
    for x, y in itertools.pairwise(nodes):
        if kg.g.has_edge(x, y):
            edges.append(_edge(x, kg.g[x][y]["relation"], y))
        else:
            edges.append(_edge(y, kg.g[y][x]["relation"], x))
    return {"from": u, "to": v, "nodes": nodes, "edges": edges, "length": len(edges)}


def status(kg: KBGraph) -> dict[str, Any]:
    """Claims that are unverified, stale, contradicted or not applicable.

    stale: claims whose newest evidence ran kernel sources that changed since (verify decides).
    contradicted: the latest measuring evidence on some accelerator refuted the claim.
    implementation_sensitive: that evidence's verdict changed with the implementation that ran.
    disagreeing: runs on one part gave different verdicts (with the pooled figure of their rounds).
    not_verifiable: rows verify does not judge everywhere by their own link (`not_applicable`
    reason, `judged_on` parts), with the reason.
    """
    unverified, contradicted, sensitive, disagreeing, by_design = [], [], [], [], []
    for claim, data in sorted(kg.g.nodes(data=True)):
        if data["kind"] != "claim":
            continue
        if data["basis"] == "unverified":
            unverified.append(
                {
                    "claim": _bare(claim),
                    "magnitude": data["magnitude"],
                    "quantity": data["quantity"],
                }
            )
        current = latest_verdicts(kg, claim)
        touchy = sorted(a for a, v in current.items() if v["implementation_sensitive"])
        if touchy:
            sensitive.append({"claim": _bare(claim), "accelerators": touchy,
                              "evidence": [e for a in touchy
                                           for e in current[a]["sensitive_evidence"]]})
        split = {a: v for a, v in current.items() if v["verdict"] == "disagreeing"}
        if split:
            disagreeing.append({"claim": _bare(claim), "accelerators": sorted(split),
                                "runs": {a: split[a]["runs"] for a in sorted(split)},
                                "pooled": {a: split[a]["pooled_text"] for a in sorted(split)}})
        found = kg.kb.claim(_bare(claim))
        why = not_verifiable(found[1]) if found else None
        if why:
            by_design.append({"claim": _bare(claim), "reason": why})
        refuted = {a: v for a, v in current.items() if v["verdict"] == "refuted"}
        if refuted:
            contradicted.append(
                {
                    "claim": _bare(claim),
                    "accelerators": sorted(refuted),
                    "evidence": [refuted[a]["evidence"] for a in sorted(refuted)],
                }
            )
    by_claim: dict[str, list[dict[str, str]]] = {}
    for item in sorted(stale_evidence(kg.kb), key=lambda s: s.evidence):
        node = node_id("evidence", item.evidence)
        claim = kg.g.nodes[node].get("claim") if node in kg.g else None
        if claim:
            by_claim.setdefault(claim, []).append(
                {"evidence": item.evidence, "reason": item.describe()}
            )
    return {
        "unverified": unverified,
        "stale": [{"claim": c, "evidence": evs} for c, evs in sorted(by_claim.items())],
        "contradicted": contradicted,
        "disagreeing": disagreeing,
        "implementation_sensitive": sensitive,
        "not_applicable": [{"claim": c, "accelerators": a} for c, a in not_applicable(kg).items()],
        "not_verifiable": by_design,
    }
