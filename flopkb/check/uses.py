"""Who uses which quantity and source, and where a claim is not applicable: read off the KB.

The same answers as the dependency graph gives (`flopkb.graph`: in-degree of a quantity or source
node, `queries.not_applicable`), computed from the records in one pass without building the
networkx graph: the validator's graph checks ran 2 s of their 2.8 s building and walking it on a
10,000-class KB. A test keeps the two equal (tests/unit/check/test_graph.py).
"""

from __future__ import annotations

from typing import Any

from flopkb.graph.build import _formula_names, architecture_sources

__all__ = ["not_applicable", "used_quantities", "used_sources"]


def used_quantities(kb: Any) -> set[str]:
    """Quantity ids with an incoming graph edge: named by a formula, a spec or a claim row."""
    quantities = kb.quantities
    used: set[str] = set()
    for q in quantities.values():
        used |= _formula_names(q.formula)
    for acc in kb.accelerators.values():
        used.update(acc.specs)
    for record in kb.classes.values():
        for row in record.flop.hardware_parameters:
            used.add(row.quantity)
            used |= _formula_names(row.formula)
    return used & set(quantities)


def used_sources(kb: Any) -> set[str]:
    """Source ids cited by an accelerator (its record or a spec), a claim row or a class."""
    used: set[str] = set()
    for acc in kb.accelerators.values():
        used.update(ref.id for ref in acc.sources)
        used.update(spec.source.id for spec in acc.specs.values() if spec.source is not None)
    for record in kb.classes.values():
        used.update(ref.id for ref in record.sources)
        used.update(r.source.id for r in record.flop.hardware_parameters if r.source is not None)
    for arch in getattr(kb, "architectures", {}).values():
        used |= architecture_sources(arch)
    return used & set(kb.sources)


def not_applicable(kb: Any) -> dict[str, list[str]]:
    """claim id -> accelerators of its class's `affected_by_hardware` (sorted, existing records)
    where a quantity the claim depends on, or an input it is computed from, is null there."""
    quantities, accelerators = kb.quantities, kb.accelerators
    inputs_of: dict[str, frozenset[str]] = {}

    def inputs(qid: str) -> frozenset[str]:
        # as KBGraph.inputs: memoised, a cycle cut where it closes (FKB403 reports cycles)
        if qid not in inputs_of:
            inputs_of[qid] = frozenset()
            below = {qid}
            q = quantities.get(qid)
            if q is not None:
                for name in _formula_names(q.formula) & quantities.keys():
                    below |= inputs(name)
            inputs_of[qid] = frozenset(below)
        return inputs_of[qid]

    nulls = {
        acc_id: frozenset(q for q, s in acc.specs.items() if s.value is None and q in quantities)
        for acc_id, acc in accelerators.items()
    }
    depends: dict[str, set[str]] = {}
    parts: dict[str, list[str]] = {}
    for rid, record in kb.classes.items():
        accs = sorted({a for a in record.affected_by_hardware if a in accelerators})
        for row in record.flop.hardware_parameters:
            claim = f"{rid}/{row.id}"
            names = ({row.quantity} | _formula_names(row.formula)) & quantities.keys()
            depends.setdefault(claim, set()).update(names)
            parts[claim] = accs
    out: dict[str, list[str]] = {}
    for claim in sorted(depends):
        closure: frozenset[str] = frozenset()
        for qid in sorted(depends[claim]):
            closure |= inputs(qid)
        na = [acc for acc in parts[claim] if nulls[acc] & closure]
        if na:
            out[claim] = na
    return out
