"""When evidence can have run: not in the future, and not before its accelerator existed.

A forged or mistyped timestamp must not decide a claim's verdict: `flopkb.evidence.store.latest`
(and with it `claims`, rule 3 and the graph) skips evidence for which `evidence_time_problem`
says why its time cannot be true; the validator reports it (FKB508, FKB509).

Accelerator records carry no release date. The floor is January 1 of the earliest year among the
sources the record cites (its `sources` and its specs' sources: the datasheet or whitepaper that
announced the part); a part citing no dated source gets `FLOOR_WITHOUT_SOURCES`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flopkb import budget

UTC = dt.timezone.utc
# CUDA 1.0 shipped in 2007: no GPU measurement flopkb can make predates it.
FLOOR_WITHOUT_SOURCES = dt.datetime(2007, 1, 1, tzinfo=UTC)


def accelerator_floors(kb: Any) -> dict[str, dt.datetime]:
    """accelerator id -> the earliest time evidence on it can carry (see the module docstring)."""
    sources = kb.sources
    floors: dict[str, dt.datetime] = {}
    for acc_id, acc in kb.accelerators.items():
        refs = [r.id for r in acc.sources]
        refs += [spec.source.id for spec in acc.specs.values() if spec.source is not None]
        years = [
            sources[r].year for r in refs if r in sources and sources[r].year is not None
        ]
        floors[acc_id] = (
            dt.datetime(min(years), 1, 1, tzinfo=UTC) if years else FLOOR_WITHOUT_SOURCES
        )
    return floors


def evidence_time_problem(
    timestamp: dt.datetime,
    accelerator: str | None,
    floors: dict[str, dt.datetime],
    now: dt.datetime,
) -> tuple[str, str] | None:
    """("future" or "before", message) when `timestamp` cannot be when evidence ran, else None."""
    if timestamp > now + budget.CLOCK_SKEW:
        return "future", (
            f"timestamp {timestamp.isoformat()} is in the future (now {now:%Y-%m-%dT%H:%MZ}, "
            f"allowed clock skew {budget.CLOCK_SKEW.days} day)"
        )
    floor = floors.get(accelerator or "", FLOOR_WITHOUT_SOURCES)
    if timestamp < floor:
        return "before", (
            f"timestamp {timestamp.isoformat()} is before {accelerator or 'any GPU'} existed "
            f"(floor {floor:%Y-%m-%d}: the earliest source it cites)"
            if accelerator in floors
            else f"timestamp {timestamp.isoformat()} is before {floor:%Y-%m-%d} (CUDA 1.0)"
        )
    return None


def implausible_evidence(kb: Any, now: dt.datetime | None = None) -> dict[str, tuple[str, str]]:
    """evidence id -> (kind, message) for every evidence record whose time cannot be true."""
    now = now or dt.datetime.now(UTC)
    floors = accelerator_floors(kb)
    out: dict[str, tuple[str, str]] = {}
    for eid, ev in kb.evidence.items():
        problem = evidence_time_problem(ev.timestamp, ev.accelerator, floors, now)
        if problem is not None:
            out[eid] = problem
    return out
