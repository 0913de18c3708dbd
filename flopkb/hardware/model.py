"""Computed hardware parameters: the one evaluator of quantities on accelerators.

Every computed quantity (a quantity record with a `formula`) is evaluated on an accelerator from
its specs, recursively through other computed quantities. An input that the part lacks (an explicit
`value: null`, e.g. INT4 on Hopper) makes the result `None` with a note saying why: the quantity is
not applicable there, which is different from an error. Values are never typed in by hand.

Units: specs are stored in each quantity's canonical unit (see docs/kb.md), and formulas are written
so that units work without scale factors (TFLOP/s / TB/s = FLOP/B) or with the factor spelled out
(`hbm_bandwidth * 1000 / sm_count` in GB/s).
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flopkb.grammar.formula import Formula, FormulaError, parse_formula
from flopkb.kb import KnowledgeBase
from flopkb.model import AcceleratorRecord, HardwareParameter


class UnknownRecord(LookupError):
    """An id that names no record of the expected kind; the message suggests close ids."""

    def __init__(self, kind: str, record_id: str, known: Iterable[str]) -> None:
        close = difflib.get_close_matches(record_id, sorted(known), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        super().__init__(f"no {kind} record {record_id!r}{hint}")


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


@dataclass(frozen=True)
class Value:
    """A quantity on one part: a number, or `None` with the reason it is not applicable."""

    value: float | None
    note: str | None = None


class HardwareModel:
    """The one evaluator of quantities on accelerators (used by `hw`, the graph and the checks).

    Built once per KB, memoised per (part, quantity). `resolve` raises (MissingInput,
    NotApplicable, FormulaError) for the checks, which need to tell those apart; `value` wraps
    the same result as a `Value` with a note for people.
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.quantities = kb.quantities
        self.formulas: dict[str, Formula | FormulaError] = {
            qid: parsed(q.formula) for qid, q in self.quantities.items() if q.formula is not None
        }
        self._memo: dict[tuple[str, str], float | FormulaError] = {}

    def accelerator(self, acc_id: str) -> AcceleratorRecord:
        acc = self.kb.accelerators.get(acc_id)
        if acc is None:
            raise UnknownRecord("accelerator", acc_id, self.kb.accelerators)
        return acc

    def is_computed(self, qid: str) -> bool:
        return qid in self.formulas

    def inputs(self, qid: str) -> frozenset[str]:
        """Every quantity `qid` depends on through formulas, itself included (cycles are cut)."""
        seen: set[str] = set()
        stack = [qid]
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            formula = self.formulas.get(name)
            if isinstance(formula, Formula):
                stack.extend(formula.names)
        return frozenset(seen)

    def resolve(
        self, acc: AcceleratorRecord, qid: str, _active: frozenset[str] = frozenset()
    ) -> float:
        """`qid` on `acc` (the spec, or its formula over other quantities); raises on no value."""
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
                return MissingInput(f"{acc.id} does not specify {qid}")
            if spec.value is None:
                return NotApplicable(f"{qid} is null on {acc.id}: {spec.note or 'not supported'}")
            return float(spec.value)
        if isinstance(formula, FormulaError):
            return MissingInput(f"the formula of {qid} is invalid: {formula}")
        if qid in active:
            return MissingInput(f"{qid} depends on itself")
        try:
            return self.evaluate(formula, acc, active | {qid})
        except FormulaError as exc:
            return exc

    def evaluate(
        self, formula: Formula, acc: AcceleratorRecord, active: frozenset[str] = frozenset()
    ) -> float:
        """`formula` on `acc`; raises MissingInput, NotApplicable or FormulaError."""
        values = {name: self.resolve(acc, name, active) for name in sorted(formula.names)}
        try:
            return formula.evaluate(values)
        except FormulaError as exc:
            raise FormulaError(f"{formula.text!r} does not evaluate on {acc.id}: {exc}") from None

    def value(self, acc: AcceleratorRecord, qid: str) -> Value:
        """`qid` on `acc` as a Value: a number, or None with the reason."""
        return _as_value(lambda: self.resolve(acc, qid))

    def evaluate_text(self, acc: AcceleratorRecord, text: str) -> Value:
        """A free formula (a `derived` claim row's) evaluated on `acc`."""
        formula = parsed(text)
        if isinstance(formula, FormulaError):
            return Value(None, str(formula))
        return _as_value(lambda: self.evaluate(formula, acc))


def _as_value(compute: Callable[[], float]) -> Value:
    try:
        return Value(compute())
    except NotApplicable as exc:
        return Value(None, f"not applicable: {exc}")
    except FormulaError as exc:
        return Value(None, str(exc))


def rounded(value: float | None) -> float | None:
    """Computed values to 6 significant digits: more would be noise from the datasheets.

    A value that is not finite (a formula over absurd specs overflowed) is None: it is shown as
    n/a, and JSON never carries Infinity or NaN.
    """
    if value is None or value == 0:
        return value
    if not math.isfinite(value):
        return None
    digits = 6 - math.floor(math.log10(abs(value))) - 1
    return round(value, max(digits, 0))


def finite_ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where either is absent, a is zero or subnormal (dividing by ~0), or the
    ratio is not finite (1e300 / 1e-300): never an exception, never inf in JSON."""
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b):
        return None
    if abs(a) < sys.float_info.min:
        return None
    out = b / a
    return out if math.isfinite(out) else None


def claim_inputs(model: HardwareModel, row: HardwareParameter) -> frozenset[str]:
    """Quantities a claim row depends on: its quantity and, for a derived row, its formula's names,
    each closed over computed quantities' formulas."""
    names = set(model.inputs(row.quantity))
    if row.formula:
        try:
            for name in parse_formula(row.formula).names:
                names |= model.inputs(name)
        except FormulaError:
            pass
    return frozenset(names)
