"""Evidence records from what a run measured: one per claim reading, one per calibration.

Every record carries the same stamp (id, title, history, machine, command, time, experiment,
judge revision, kernel hashes: `_stamp`); a claim's record adds its reading (`Reading`: every
implementation combination judged, the verdict reported) and a calibration its ceilings. Numbers
are stored as plain JSON rounded to 6 significant digits: what `flopkb validate` re-derives a
verdict from (`flopkb.evidence.rederive`) is what was written, not what was in memory.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from flopkb.evidence import impls, store
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.measurement import Judgement
from flopkb.evidence.stats import tolerances
from flopkb.model import EvidenceRecord, HistoryEntry, Judged, Measured
from flopkb.model.base import CURRENT_SCHEMA_VERSION
from flopkb.verify import plots
from flopkb.verify.plan import Result, Target
from flopkb.verify.session import Session

CALIBRATION_CRITERION = "ceilings within (0.5, 1.05] x the accelerator's datasheet figures"


@dataclass
class Combo:
    """One implementation combination: its rounds merged into one entry (`execute.merged_entry`:
    measurement `m`, timings, checks, notes, described, duration, rounds) and how it read."""

    entry: dict[str, Any]
    verdict: str
    reason: str | None
    judgement: Judgement | None


@dataclass
class Reading:
    """One claim read in this run: the conditions used, every combination (the defaults' first)
    and the verdict the record reports (not-applicable keeps the measured one in `applicable`)."""

    target: Target
    conditions: dict[str, Any]
    notes: list[str]
    combos: list[Combo]
    verdict: str
    applicable: str | None
    reason: str | None
    sensitive: bool


def jsonable(value: Any) -> Any:
    """Plain JSON types only (floats rounded to 6 significant digits, inf/nan as strings)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return float(f"{value:.6g}")
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)


def measured_of(j: Judgement | None) -> Measured | None:
    """A judgement's measured interval as evidence stores it."""
    if j is None or j.measured is None:
        return None
    r = lambda x: None if x is None else float(f"{x:.6g}")  # noqa: E731
    return Measured(value=r(j.measured.value), low=r(j.measured.low), high=r(j.measured.high),
                    unit=j.unit, what=j.what or None)


def implementation_text(entry: dict[str, Any]) -> str:
    """'ssd: bundled ssd_chunked (chunk 64); scan: peer:mamba_ssm ...' for one combination."""
    described = entry.get("described") or {}
    parts = [f"{side}: {described.get(side, name)}" for side, name in entry["combo"].items()]
    return "; ".join(parts) or "bundled"


def _stamp(s: Session, info: ExperimentInfo, hashes: dict[str, str], claim: str | None,
           verdict: str) -> dict[str, Any]:
    """The fields every record of this run carries."""
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    eid = store.unique_id(s.out_dir, store.evidence_id(claim, s.accelerator, now))
    title = (f"{claim} on {s.accelerator or 'unknown GPU'}: {verdict}" if claim
             else f"Measured ceilings of {s.accelerator or 'unknown GPU'}")
    return {"schema_version": CURRENT_SCHEMA_VERSION, "id": eid, "kind": "evidence",
            "title": title, "history": [HistoryEntry(date=now.date(), by="flopkb verify",
                                                     note=f"written by: {s.command}")],
            "claim": claim, "experiment": info.name, "accelerator": s.accelerator,
            "kernel_hashes": hashes, "judge_revision": info.judge_revision,
            "machine": s.machine, "command": s.command, "timestamp": now,
            "verdict": verdict}


def claim_record(s: Session, info: ExperimentInfo, hashes: dict[str, str], reading: Reading,
                 ceilings: dict[str, Any]) -> EvidenceRecord:
    """The evidence of one claim's reading (the first combination's measurement is the
    record's; every combination is a judgement when the experiment has sides)."""
    t, first = reading.target, reading.combos[0]
    m, judgement = first.entry["m"], first.judgement
    others = reading.combos[1:]
    statistics = {"timings": first.entry["timings"], "data": m.data if m else {},
                  "plot": m.plot if m else None}
    if others:
        statistics["other_combinations"] = {impls.label(c.entry["combo"]): c.entry["timings"]
                                            for c in others}
    conditions = {**reading.conditions,
                  **({"not_honoured": reading.notes} if reading.notes else {}),
                  "quick": s.quick, **s.run_conditions}
    judgements = [Judged(combination=c.entry["combo"],
                         implementations=c.entry.get("described") or {}, verdict=c.verdict,
                         measured=measured_of(c.judgement), reason=c.reason,
                         rounds=c.entry["rounds"] if k else [])
                  for k, c in enumerate(reading.combos)] if info.sides else []
    record = EvidenceRecord(
        **_stamp(s, info, hashes, t.claim, reading.verdict),
        implementation=implementation_text(first.entry), conditions=jsonable(conditions),
        statistics=jsonable(statistics), measured=measured_of(judgement),
        expected=t.magnitude.as_dict() if t.magnitude else
        {"text": t.row.magnitude, "error": t.magnitude_error},
        applicable_verdict=reading.applicable, reason=reading.reason,
        criterion=judgement.criterion if judgement else info.criterion,
        correctness=jsonable([ch for c in reading.combos for ch in c.entry["checks"]]),
        ceilings=ceilings, sweep=jsonable(m.sweep if m else []),
        duration_s=round(sum(c.entry["duration"] for c in reading.combos), 2),
        judgements=judgements, implementation_sensitive=reading.sensitive,
        rounds=first.entry["rounds"], tolerance=tolerances())
    return with_plot(s, record, m.plot if m else None)


def calibration_record(s: Session, info: ExperimentInfo, hashes: dict[str, str], *,
                       conditions: dict[str, Any], statistics: dict[str, Any],
                       measured: Measured | None, verdict: str, reason: str | None,
                       checks: list[dict[str, Any]], ceilings: dict[str, Any],
                       duration: float) -> EvidenceRecord:
    """The evidence of one calibration: the machine's measured ceilings, against its datasheet."""
    return EvidenceRecord(
        **_stamp(s, info, hashes, None, verdict), implementation="bundled",
        conditions=jsonable(conditions), statistics=jsonable(statistics), measured=measured,
        reason=reason, criterion=CALIBRATION_CRITERION, correctness=jsonable(checks),
        ceilings=ceilings, duration_s=round(duration, 2))


def result_of(s: Session, record: EvidenceRecord, reading: Reading | None = None) -> Result:
    """The `flopkb verify` result row of a record this run wrote (or would have written)."""
    measured = record.measured.model_dump(mode="json") if record.measured else None
    evidence = record.id if s.write else None
    if reading is None:
        return Result(None, record.experiment, record.verdict.value,
                      record.measured.model_dump() if record.measured else None, None, evidence,
                      record.reason, dict(record.conditions), duration_s=record.duration_s)
    return Result(record.claim, record.experiment, record.verdict.value, measured,
                  record.expected, evidence, record.reason, record.conditions, record.criterion,
                  duration_s=record.duration_s,
                  judgements=[j.model_dump(mode="json") for j in record.judgements] or None,
                  implementation_sensitive=reading.sensitive)


def with_plot(s: Session, record: EvidenceRecord, spec: dict[str, Any] | None) -> EvidenceRecord:
    """The record with its claim's picture drawn beside it, named like it; a picture that fails
    to draw never costs the evidence (the failure is kept in its statistics)."""
    if not s.write or spec is None:
        return record
    try:
        name = f"{record.id}.png"
        path = plots.render(spec, record.sweep, s.out_dir / name, plots.ClaimView.of(record))
    except Exception as exc:
        failed = {**record.statistics, "plot_error": f"{type(exc).__name__}: {exc}"}
        return record.model_copy(update={"statistics": failed})
    return record.model_copy(update={"artifacts": [name]}) if path else record
