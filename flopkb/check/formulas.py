"""Computed quantities: formulas parse by the whitelist, name quantities, form no cycle, evaluate.

Values come from `flopkb.hardware.model.HardwareModel`, the one evaluator of quantities on
accelerators; provenance rule 3 (`derived`) uses it too.
"""

from __future__ import annotations

from collections.abc import Iterator

import networkx as nx

from flopkb.check.base import CheckContext, check
from flopkb.check.references import unloaded_reference
from flopkb.findings import Finding
from flopkb.grammar.formula import FormulaError
from flopkb.hardware.model import HardwareModel, MissingInput, NotApplicable, parsed
from flopkb.kb import KnowledgeBase


class QuantityValues(HardwareModel):
    """The hardware model plus what the checks need: which parts can evaluate a quantity."""

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__(kb)
        self._by_spec: dict[str, set[str]] | None = None

    def candidates(self, qid: str) -> set[str]:
        """Accelerators that specify every datasheet input of `qid` (the others cannot evaluate it).

        Indexed by spec key, so a KB with 10^3 accelerators and 10^3 computed quantities does not
        try every pair.
        """
        if self._by_spec is None:
            self._by_spec = {}
            for acc_id, acc in self.kb.accelerators.items():
                for key in acc.specs:
                    self._by_spec.setdefault(key, set()).add(acc_id)
        closure = self.inputs(qid)
        leaves = {name for name in closure if name not in self.formulas}
        if any(isinstance(self.formulas.get(n), FormulaError) for n in closure):
            return set()
        if not leaves:
            # a formula of constants only: every part can (and must) evaluate it
            return set(self.kb.accelerators)
        sets = sorted((self._by_spec.get(name, set()) for name in leaves), key=len)
        return set.intersection(*sets)


def values_of(ctx: CheckContext) -> QuantityValues:
    """One evaluator per KB, shared by the checks that need quantity values."""
    values = ctx.shared.get("quantity_values")
    if values is None:
        values = ctx.shared["quantity_values"] = QuantityValues(ctx.kb)
    return values


@check
def quantity_formulas(ctx: CheckContext) -> Iterator[Finding]:
    """FKB401/402/403: formulas parse, name only quantities, form no cycle."""
    values = values_of(ctx)
    graph: nx.DiGraph = nx.DiGraph()
    for qid, formula in sorted(values.formulas.items()):
        if isinstance(formula, FormulaError):
            yield ctx.finding("FKB401", qid, ("formula",), str(formula))
            continue
        for name in sorted(formula.names):
            if name not in values.quantities:
                unloaded = unloaded_reference(ctx, qid, ("formula",), name, "formula")
                yield unloaded or ctx.finding(
                    "FKB402", qid, ("formula",), f"{name!r} is not a quantity record"
                )
            elif name in values.formulas:
                graph.add_edge(qid, name)
    reported: set[frozenset[str]] = set()
    for cycle in nx.simple_cycles(graph):
        if frozenset(cycle) in reported:
            continue
        reported.add(frozenset(cycle))
        first = min(cycle)
        start = cycle.index(first)
        path = [*cycle[start:], *cycle[:start], first]
        yield ctx.finding(
            "FKB403", first, ("formula",), "cycle among computed quantities: " + " -> ".join(path)
        )


@check
def quantity_values(ctx: CheckContext) -> Iterator[Finding]:
    """FKB404/405: computed quantities evaluate where their inputs exist; never typed in."""
    kb = ctx.kb
    values = values_of(ctx)
    for qid, formula in sorted(values.formulas.items()):
        if not isinstance(formula, FormulaError):
            yield from ctx.isolated(qid, _evaluates(ctx, values, qid))
    for acc_id, acc in sorted(kb.accelerators.items()):
        for qid in acc.specs:
            if qid in values.formulas:
                yield ctx.finding(
                    "FKB405", acc_id, ("specs", qid),
                    f"{qid} is computed ({kb.quantities[qid].formula}); remove the typed value",
                )  # fmt: skip


def _evaluates(ctx: CheckContext, values: QuantityValues, qid: str) -> Iterator[Finding]:
    """FKB404 for one computed quantity, one finding per distinct failure."""
    failures: dict[str, list[str]] = {}
    for acc_id in sorted(values.candidates(qid)):
        acc = ctx.kb.accelerators[acc_id]
        try:
            values.resolve(acc, qid)
        except MissingInput:
            continue
        except FormulaError as exc:
            failures.setdefault(str(exc).replace(f" on {acc_id}", ""), []).append(acc_id)
    for message, accs in failures.items():
        yield ctx.finding("FKB404", qid, ("formula",), f"{message} on {', '.join(accs)}")


__all__ = ["MissingInput", "NotApplicable", "QuantityValues", "parsed", "values_of"]
