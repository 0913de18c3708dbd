"""What `flopkb hw show` and `hw compare` report: a part's datasheet specs with their sources,
its computed parameters, its measured ceilings (calibration evidence) and the derived claim rows
computed on it; what differs between two parts and which claims depend on it."""

from __future__ import annotations

import math
from typing import Any

from flopkb.hardware.derived import compute_row, quantity_unit
from flopkb.hardware.model import HardwareModel, claim_inputs, finite_ratio, rounded
from flopkb.kb import KnowledgeBase
from flopkb.model import EvidenceRecord

# Relative tolerance under which two values count as equal in `hw_compare`.
_REL_TOL = 1e-9


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

    Shape (stable): `{"id", "specs": {qid: {"value","unit","source"}}, "computed": {qid: {"value",
    "unit","formula"}}}`, plus `title`, per-entry `note` where the record or evaluation has one, and
    `measured` (calibration evidence: ceiling -> value, unit, low, high, experiment, evidence), and
    `derived`: every `basis: derived` claim row of a class affected by this part, with its formula
    computed here (`value`, `unit` of the row's quantity, `agrees` with the magnitude:
    flopkb.hardware.derived).
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
