"""Computed quantities: formulas parse by the whitelist, name quantities, form no cycle, evaluate.

`QuantityValues` evaluates any quantity on any accelerator (datasheet spec, or the quantity's
formula over other quantities, recursively); provenance rule 3 (`derived`) uses it too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import networkx as nx

from flopkb.check.base import CheckContext, check, rule
from flopkb.findings import Finding, Severity
from flopkb.formula import Formula, FormulaError, parse_formula
from flopkb.kb import KnowledgeBase
from flopkb.model import AcceleratorRecord

BAD_FORMULA = rule(
    "FKB401", Severity.error,
    "a formula outside the whitelist (numbers, quantity ids, + - * / ** and parentheses)",
)  # fmt: skip
NOT_A_QUANTITY = rule(
    "FKB402", Severity.error, "a formula names an id that is not a quantity record"
)
CYCLE = rule("FKB403", Severity.error, "computed quantities depend on each other in a cycle")
EVAL_FAILS = rule(
    "FKB404", Severity.error,
    "a computed quantity does not evaluate on an accelerator (division by zero, overflow, NaN)",
)  # fmt: skip
TYPED_IN = rule(
    "FKB405",
    Severity.error,
    "an accelerator types in a value for a computed quantity (derive it instead)",
)


class MissingInput(FormulaError):
    """An input has no value on this accelerator: the spec is absent, or not a valid quantity."""


class NotApplicable(MissingInput):
    """An input is an explicit null on this accelerator: the feature is unsupported there."""


def parsed(text: str) -> Formula | FormulaError:
    """The parsed formula, or the error saying why it is outside the whitelist."""
    try:
        return parse_formula(text)
    except FormulaError as exc:
        return exc
    except (ValueError, TypeError, MemoryError, RecursionError) as exc:
        return FormulaError(f"cannot parse {text[:60]!r}: {type(exc).__name__}")


class QuantityValues:
    """Values of quantities on accelerators; errors are FormulaError values, never crashes."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.quantities = kb.quantities
        self.formulas = {
            qid: parsed(q.formula) for qid, q in self.quantities.items() if q.formula is not None
        }
        self._memo: dict[tuple[str, str], float | FormulaError] = {}
        self._by_spec: dict[str, set[str]] | None = None

    def inputs(self, qid: str, _active: frozenset[str] = frozenset()) -> set[str]:
        """The datasheet quantities a quantity rests on, through computed quantities."""
        formula = self.formulas.get(qid)
        if formula is None:
            return {qid}
        if isinstance(formula, FormulaError) or qid in _active:
            return set()
        out: set[str] = set()
        for name in formula.names:
            out |= self.inputs(name, _active | {qid})
        return out

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
        inputs = self.inputs(qid)
        if not inputs:
            return set()
        sets = sorted((self._by_spec.get(name, set()) for name in inputs), key=len)
        return set.intersection(*sets)

    def value(
        self, acc: AcceleratorRecord, qid: str, _active: frozenset[str] = frozenset()
    ) -> float:
        key = (acc.id, qid)
        if key not in self._memo:
            self._memo[key] = self._compute(acc, qid, _active)
        result = self._memo[key]
        if isinstance(result, FormulaError):
            raise result
        return result

    def _compute(
        self, acc: AcceleratorRecord, qid: str, active: frozenset[str]
    ) -> float | FormulaError:
        if qid not in self.quantities:
            return MissingInput(f"{qid!r} is not a quantity")
        formula = self.formulas.get(qid)
        if formula is None:
            spec = acc.specs.get(qid)
            if spec is None:
                return MissingInput(f"{acc.id} has no spec {qid}")
            if spec.value is None:
                note = f" ({spec.note})" if spec.note else ""
                return NotApplicable(f"{qid} is null on {acc.id}: unsupported{note}")
            return float(spec.value)
        if isinstance(formula, FormulaError):
            return MissingInput(f"{qid} has an invalid formula")
        if qid in active:
            return MissingInput(f"{qid} depends on itself")
        try:
            return self.evaluate(formula, acc, active | {qid})
        except FormulaError as exc:
            return exc

    def evaluate(
        self, formula: Formula, acc: AcceleratorRecord, active: frozenset[str] = frozenset()
    ) -> float:
        """`formula` on `acc`; raises MissingInput or FormulaError (division by zero, NaN, ...)."""
        values = {name: self.value(acc, name, active) for name in sorted(formula.names)}
        try:
            result = formula.evaluate(values)
        except TypeError:
            # a negative base to a fractional power gives a complex number
            raise FormulaError(f"{formula.text!r} is not a real number on {acc.id}") from None
        if isinstance(result, complex) or not math.isfinite(result):
            raise FormulaError(f"{formula.text!r} is not a finite real number on {acc.id}")
        return result


def values_of(ctx: CheckContext) -> QuantityValues:
    """One evaluator per KB, shared by the checks that need quantity values."""
    cached = getattr(ctx, "_quantity_values", None)
    if cached is None or cached.kb is not ctx.kb:
        cached = QuantityValues(ctx.kb)
        ctx._quantity_values = cached  # type: ignore[attr-defined]
    return cached


@check
def quantity_formulas(ctx: CheckContext) -> Iterator[Finding]:
    """FKB401/402/403: formulas parse, name only quantities, form no cycle."""
    kb = ctx.kb
    values = values_of(ctx)
    graph: nx.DiGraph = nx.DiGraph()
    for qid, formula in sorted(values.formulas.items()):
        if isinstance(formula, FormulaError):
            yield ctx.finding(BAD_FORMULA, qid, ("formula",), str(formula))
            continue
        for name in sorted(formula.names):
            if name not in values.quantities:
                if name not in kb.unloaded:
                    yield ctx.finding(
                        NOT_A_QUANTITY, qid, ("formula",), f"{name!r} is not a quantity record"
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
            CYCLE, first, ("formula",), "cycle among computed quantities: " + " -> ".join(path)
        )


@check
def quantity_values(ctx: CheckContext) -> Iterator[Finding]:
    """FKB404/405: computed quantities evaluate where their inputs exist; never typed in."""
    kb = ctx.kb
    values = values_of(ctx)
    for qid, formula in sorted(values.formulas.items()):
        if isinstance(formula, FormulaError):
            continue
        failures: dict[str, list[str]] = {}
        for acc_id in sorted(values.candidates(qid)):
            acc = kb.accelerators[acc_id]
            try:
                values.value(acc, qid)
            except MissingInput:
                continue
            except FormulaError as exc:
                failures.setdefault(str(exc).replace(f" on {acc_id}", ""), []).append(acc_id)
        for message, accs in failures.items():
            yield ctx.finding(EVAL_FAILS, qid, ("formula",), f"{message} on {', '.join(accs)}")
    for acc_id, acc in sorted(kb.accelerators.items()):
        for qid in acc.specs:
            if qid in values.formulas:
                yield ctx.finding(
                    TYPED_IN, acc_id, ("specs", qid),
                    f"{qid} is computed ({kb.quantities[qid].formula}); remove the typed value",
                )  # fmt: skip
