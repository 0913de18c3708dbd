"""Computed hardware parameters: datasheet specs, the quantities derived from them, comparisons.

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
from typing import Any

from flopkb.formula import Formula, FormulaError, parse_formula
from flopkb.kb import KnowledgeBase
from flopkb.model import AcceleratorRecord, EvidenceRecord, HardwareParameter

# Relative tolerance under which two values count as equal in `hw_compare`.
_REL_TOL = 1e-9


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


# what a calibration measures, read from its statistics.data: the ceiling's name, the median
# figure's key, the keys of its low / high figures (from the p90 / p10 times), and its unit
CALIBRATION_CEILINGS = (
    ("bf16_gemm", "bf16_tflops", "bf16_tflops_low", "bf16_tflops_high", "TFLOP/s"),
    ("copy_bandwidth", "copy_gbps", "copy_gbps_low", "copy_gbps_high", "GB/s"),
)


def _ceilings(ev: EvidenceRecord) -> dict[str, dict[str, Any]]:
    """The measured ceilings of one claim-less evidence record: each calibration ceiling (GEMM
    and copy medians), or the record's own measured value for another experiment."""
    data = ev.statistics.get("data") if isinstance(ev.statistics, dict) else None
    common = {"experiment": ev.experiment, "evidence": ev.id, "timestamp": ev.timestamp.isoformat()}
    out: dict[str, dict[str, Any]] = {}
    if ev.experiment == "calibration" and isinstance(data, dict):
        for name, key, low, high, unit in CALIBRATION_CEILINGS:
            value = data.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[name] = {
                    "value": rounded(float(value)), "unit": unit,
                    "low": _number_or_none(data.get(low)), "high": _number_or_none(data.get(high)),
                    **common,
                }  # fmt: skip
    if not out and ev.measured is not None:
        out[ev.experiment] = {
            "value": ev.measured.value, "unit": ev.measured.unit,
            "low": ev.measured.low, "high": ev.measured.high, **common,
        }  # fmt: skip
    return out


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return rounded(float(value))
    return None


def finite_ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where either is absent, a is zero or subnormal (dividing by ~0), or the
    ratio is not finite (1e300 / 1e-300): never an exception, never inf in JSON."""
    if a is None or b is None or not math.isfinite(a) or not math.isfinite(b):
        return None
    if abs(a) < sys.float_info.min:
        return None
    out = b / a
    return out if math.isfinite(out) else None


def _measured(kb: KnowledgeBase, acc_id: str) -> dict[str, dict[str, Any]]:
    """Latest calibration evidence (claim-less) per experiment on this part: measured ceilings,
    one entry per ceiling (`bf16_gemm`, `copy_bandwidth`: medians, with the p90/p10 band)."""
    latest: dict[str, EvidenceRecord] = {}
    implausible = kb.implausible_evidence()
    for ev in kb.evidence.values():
        if ev.id in implausible:
            continue  # a calibration dated in the future must not set today's ceilings
        if ev.claim is None and ev.accelerator == acc_id and ev.measured is not None:
            prev = latest.get(ev.experiment)
            if prev is None or (ev.timestamp, ev.id) > (prev.timestamp, prev.id):
                latest[ev.experiment] = ev
    out: dict[str, dict[str, Any]] = {}
    for _, ev in sorted(latest.items()):
        out.update(_ceilings(ev))
    return out


def hw_show(kb: KnowledgeBase, acc_id: str, model: HardwareModel | None = None) -> dict[str, Any]:
    """Datasheet specs with sources and computed parameters with formula and unit.

    Shape (DESIGN): `{"id", "specs": {qid: {"value","unit","source"}}, "computed": {qid: {"value",
    "unit","formula"}}}`, plus `title`, per-entry `note` where the record or evaluation has one, and
    `measured` (calibration evidence: ceiling -> value, unit, low, high, experiment, evidence), and
    `derived`: every `basis: derived` claim row of a class affected by this part, with its formula
    computed here (`value`, `unit` of the row's quantity, `agrees` with the magnitude:
    flopkb.derived).
    """
    model = model or HardwareModel(kb)
    acc = model.accelerator(acc_id)
    specs: dict[str, dict[str, Any]] = {}
    for qid, spec in sorted(acc.specs.items()):
        entry: dict[str, Any] = {
            "value": spec.value,
            "unit": spec.unit,
            "source": {"id": spec.source.id, "locator": spec.source.locator}
            if spec.source
            else None,
        }
        if spec.note:
            entry["note"] = spec.note
        specs[qid] = entry
    computed: dict[str, dict[str, Any]] = {}
    for qid in sorted(q for q in model.quantities if model.is_computed(q)):
        quantity = model.quantities[qid]
        got = model.value(acc, qid)
        entry = {"value": rounded(got.value), "unit": quantity.unit, "formula": quantity.formula}
        if got.note:
            entry["note"] = got.note
        computed[qid] = entry
    return {
        "id": acc.id,
        "title": acc.title,
        "specs": specs,
        "computed": computed,
        "measured": _measured(kb, acc.id),
        "derived": _derived_rows(kb, model, acc.id),
    }


def _derived_rows(kb: KnowledgeBase, model: HardwareModel, acc_id: str) -> list[dict[str, Any]]:
    """The derived claim rows that apply to `acc_id`, computed on it."""
    from flopkb.derived import compute_row, quantity_unit

    out: list[dict[str, Any]] = []
    for claim_id, record, row in kb.claims():
        if row.basis.value != "derived" or not row.formula:
            continue
        if acc_id not in record.affected_by_hardware:
            continue
        computed = compute_row(model, record, row, acc_id)
        out.append({
            "claim": claim_id, "formula": row.formula, "magnitude": row.magnitude,
            "unit": quantity_unit(model, row), **computed.as_dict(),
        })  # fmt: skip
    return out


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return not math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=0.0)


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


def hw_compare(
    kb: KnowledgeBase, a: str, b: str, model: HardwareModel | None = None
) -> dict[str, Any]:
    """What differs between parts `a` and `b`, by what ratio (b / a), and which claims depend on it.

    A claim depends on a differing quantity directly (its row's quantity) or through computed
    quantities' formulas (e.g. a row on `ridge_point_bf16` depends on `hbm_bandwidth`).
    """
    model = model or HardwareModel(kb)
    acc_a, acc_b = model.accelerator(a), model.accelerator(b)
    qids = sorted(
        set(acc_a.specs) | set(acc_b.specs) | {q for q in model.quantities if model.is_computed(q)}
    )
    rows: list[dict[str, Any]] = []
    differing: set[str] = set()
    for qid in qids:
        va, vb = model.value(acc_a, qid), model.value(acc_b, qid)
        differs = _differs(va.value, vb.value)
        if differs:
            differing.add(qid)
        ratio = rounded(finite_ratio(va.value, vb.value))
        note = None
        if ratio is None and va.value and vb.value is not None:
            note = "ratio out of range (overflows, or divides by ~0)"
        quantity = model.quantities.get(qid)
        unit = quantity.unit if quantity else (acc_a.specs.get(qid) or acc_b.specs[qid]).unit
        rows.append(
            {
                "quantity": qid,
                "kind": "computed" if model.is_computed(qid) else "spec",
                "unit": unit,
                "a": rounded(va.value),
                "b": rounded(vb.value),
                "ratio": ratio,
                "differs": differs,
                **({"note": note} if note else {}),
            }
        )
    claims: list[dict[str, Any]] = []
    for claim_id, record, row in kb.claims():
        via = sorted(claim_inputs(model, row) & differing)
        if not via:
            continue
        claims.append(
            {
                "claim": claim_id,
                "quantity": row.quantity,
                "basis": row.basis.value,
                "magnitude": row.magnitude,
                "via": via,
                "applies": {
                    a: a in record.affected_by_hardware,
                    b: b in record.affected_by_hardware,
                },
            }
        )
    return {
        "a": a,
        "b": b,
        "quantities": rows,
        "differs": sorted(differing),
        "claims": claims,
    }
