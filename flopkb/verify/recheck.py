"""`flopkb verify --gpu --recheck EVIDENCE`: measure one evidence record's claim again, as it ran
(same experiment, same implementation combinations), and say whether it reproduces.

Torch-free comparison (`compare`), so the rule is tested with fake measurements; `recheck` runs
the GPU side through `flopkb.verify.execute` and writes no evidence (a recheck must not change
the pooled verdict behind the user's back: `flopkb verify --gpu --claim ...` records a new run).

A combination reproduces when its new verdict is the recorded one and its new value lies inside
the recorded interval; `verdict holds` when the verdict is the same but the value moved outside
the interval (the interval was too narrow for between-run spread); `differs` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flopkb.evidence.hashing import judge_changed
from flopkb.model import EvidenceRecord, Measured
from flopkb.verify.execute import run_gpu
from flopkb.verify.plan import plan

REPRODUCES, VERDICT_HOLDS, DIFFERS, NOT_MEASURED = (
    "reproduces", "verdict holds", "differs", "not measured")


@dataclass(frozen=True)
class Outcome:
    """One implementation combination: recorded vs measured again."""

    combination: dict[str, str]
    verdict_then: str
    verdict_now: str | None
    then: Measured | None
    value_now: float | None
    status: str

    def as_dict(self) -> dict[str, Any]:
        return {"combination": self.combination, "verdict_then": self.verdict_then,
                "verdict_now": self.verdict_now,
                "then": self.then.model_dump(mode="json") if self.then else None,
                "value_now": self.value_now, "status": self.status}


def _status(verdict_then: str, then: Measured | None, verdict_now: str | None,
            value_now: float | None) -> str:
    if verdict_now is None:
        return NOT_MEASURED
    if verdict_now != verdict_then:
        return DIFFERS
    if then is None or then.value is None:
        return REPRODUCES if value_now is None else VERDICT_HOLDS
    low = then.low if then.low is not None else float("-inf")
    high = then.high if then.high is not None else float("inf")
    return REPRODUCES if value_now is not None and low <= value_now <= high else VERDICT_HOLDS


def _recorded(ev: EvidenceRecord) -> list[tuple[dict[str, str], str, Measured | None]]:
    if ev.judgements:
        return [(dict(j.combination), j.verdict.value, j.measured) for j in ev.judgements]
    verdict = ev.applicable_verdict or ev.verdict
    return [({}, verdict.value, ev.measured)]


def compare(ev: EvidenceRecord, again: dict[str, Any]) -> list[Outcome]:
    """Outcomes per recorded combination against `again`, a verify result
    (`Result.as_dict()`: verdict, measured, judgements)."""
    now: dict[str, tuple[str, float | None]] = {}
    for j in again.get("judgements") or []:
        m = j.get("measured") or {}
        now[repr(sorted(j["combination"].items()))] = (j["verdict"], m.get("value"))
    if not again.get("judgements"):
        m = again.get("measured") or {}
        now[repr([])] = (again["verdict"], m.get("value"))
    out = []
    for combo, verdict_then, then in _recorded(ev):
        verdict_now, value_now = now.get(repr(sorted(combo.items())), (None, None))
        out.append(Outcome(combo, verdict_then, verdict_now, then, value_now,
                           _status(verdict_then, then, verdict_now, value_now)))
    return out


def reproduces(outcomes: list[Outcome]) -> bool:
    """The record reproduces when its first combination (the one its verdict reports) does."""
    return bool(outcomes) and outcomes[0].status == REPRODUCES


def recheck(kb: Any, ev: EvidenceRecord, **run: Any
            ) -> tuple[dict[str, Any] | None, list[Outcome]]:
    """Run `ev`'s claim again on this GPU (no evidence written) and compare. `run`: the
    options of `flopkb.verify.execute.run_gpu` (rounds, device, command, ...). Raises
    NoGpuError, ValueError."""
    if ev.claim is None:
        raise ValueError(f"{ev.id} is a calibration: it has no claim to measure again")
    jobs, _ = plan(kb, claim=ev.claim)
    jobs = [j for j in jobs if j.experiment == ev.experiment]
    if not jobs:
        raise ValueError(f"{ev.claim} no longer links experiment {ev.experiment!r}")
    changed = judge_changed(kb.catalogue(), ev)
    if changed:
        raise ValueError(f"{ev.id} was judged under revision {changed[0]} of "
                         f"{ev.experiment!r}'s judge, which is now at revision {changed[1]}: "
                         f"its verdict cannot be re-checked by the new rule; "
                         f"`flopkb verify --gpu --claim {ev.claim}` records a new run")
    impl = "all" if len(ev.judgements) > 1 else "bundled"
    machine, results = run_gpu(kb, jobs, impl=impl, write=False, **run)
    mine = [r for r in results or [] if r.claim == ev.claim]
    return machine, compare(ev, mine[0].as_dict()) if mine else []
