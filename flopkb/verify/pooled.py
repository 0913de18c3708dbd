"""Pooled verdicts: a claim's verdict on an accelerator from all of its evidence, never the latest.

Torch-free. Per (claim, accelerator), the runs that speak are the trusted evidence records
(plausible time, verdict re-derives: `kb.implausible_evidence()`, `kb.untrusted_evidence()`) that
measured
something (confirmed, refuted, inconclusive) and whose kernel sources are the current ones. When
no such run is fresh, the stale measuring runs speak (flagged `stale`). When every run agrees, the
pooled verdict is theirs (`confirmed (2/2 runs)`); when they differ it is `disagreeing`, with
each run's verdict listed. Where nothing measured, the newest record's verdict stands (error,
not-run, not-applicable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flopkb.model import EvidenceRecord

MEASURING = frozenset({"confirmed", "refuted", "inconclusive"})
DISAGREEING = "disagreeing"


@dataclass(frozen=True)
class Pooled:
    """One claim's verdict on one accelerator, with the runs it was pooled from (newest first)."""

    verdict: str
    runs: list[EvidenceRecord] = field(default_factory=list)
    stale: bool = False

    @property
    def measuring(self) -> list[EvidenceRecord]:
        return [ev for ev in self.runs if ev.verdict.value in MEASURING]

    @property
    def agreeing(self) -> int:
        return sum(1 for ev in self.runs if ev.verdict.value == self.verdict)

    @property
    def implementation_sensitive(self) -> bool:
        return any(ev.implementation_sensitive for ev in self.runs)

    def text(self) -> str:
        """`confirmed (2/2 runs)`, `disagreeing (confirmed, refuted)`, `error`."""
        n = len(self.measuring)
        if self.verdict == DISAGREEING:
            listed = ", ".join(ev.verdict.value for ev in self.runs)
            return f"{DISAGREEING} ({listed})" + (", stale" if self.stale else "")
        if not n:
            return self.verdict
        runs = "run" if n == 1 else "runs"
        return f"{self.verdict} ({self.agreeing}/{n} {runs}" + (", stale)" if self.stale else ")")

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the pooled verdict and each run's own."""
        return {
            "verdict": self.verdict,
            "runs": len(self.measuring),
            "agreeing": self.agreeing if self.measuring else 0,
            "stale": self.stale,
            "per_run": [{"evidence": ev.id, "verdict": ev.verdict.value,
                         "timestamp": ev.timestamp.isoformat().replace("+00:00", "Z"),
                         "implementation_sensitive": ev.implementation_sensitive,
                         "measured": ev.measured.model_dump(mode="json") if ev.measured else None}
                        for ev in self.runs],
        }


def _stale_ids(kb: Any, records: list[EvidenceRecord]) -> set[str]:
    from flopkb.verify import registry
    from flopkb.verify.hashing import compare, current_hashes

    cache: dict[str, dict[str, str]] = {}
    out = set()
    for ev in records:
        if not registry.experiment_exists(ev.experiment):
            continue
        if ev.experiment not in cache:
            cache[ev.experiment] = current_hashes(kb.root, ev.experiment)
        if any(compare(dict(ev.kernel_hashes), cache[ev.experiment])):
            out.add(ev.id)
    return out


def pool(records: list[EvidenceRecord], stale: set[str]) -> Pooled:
    """The pooled verdict of one (claim, accelerator)'s records."""
    newest_first = sorted(records, key=lambda ev: (ev.timestamp, ev.id), reverse=True)
    measuring = [ev for ev in newest_first if ev.verdict.value in MEASURING]
    if not measuring:
        return Pooled(newest_first[0].verdict.value, newest_first[:1])
    fresh = [ev for ev in measuring if ev.id not in stale]
    runs = fresh or measuring
    verdicts = {ev.verdict.value for ev in runs}
    verdict = verdicts.pop() if len(verdicts) == 1 else DISAGREEING
    return Pooled(verdict, runs, stale=not fresh)


def pooled(kb: Any, claim: str | None = None,
           keep: Callable[[EvidenceRecord], bool] | None = None
           ) -> dict[tuple[str, str], Pooled]:
    """{(claim, accelerator): Pooled} over the trusted evidence of `kb` (calibrations left out;
    an unmatched GPU keys as "unknown-gpu"). `keep` narrows the records that may speak.
    Without `keep`, computed once per state of `kb.records` (graph queries ask per claim)."""
    if keep is None:
        key = (id(kb.records), len(kb.records))
        cached = getattr(kb, "_pooled_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, _pool_all(kb, None))
            kb._pooled_cache = cached
        every = cached[1]
    else:
        every = _pool_all(kb, keep)
    if claim is None:
        return dict(every)
    return {k: v for k, v in every.items() if k[0] == claim}


def _pool_all(kb: Any, keep: Callable[[EvidenceRecord], bool] | None
              ) -> dict[tuple[str, str], Pooled]:
    implausible, untrusted = kb.implausible_evidence(), kb.untrusted_evidence()
    groups: dict[tuple[str, str], list[EvidenceRecord]] = {}
    for ev in kb.evidence.values():
        if ev.claim is None:
            continue
        if ev.id in implausible or ev.id in untrusted or (keep is not None and not keep(ev)):
            continue
        groups.setdefault((ev.claim, ev.accelerator or "unknown-gpu"), []).append(ev)
    stale = _stale_ids(kb, [ev for evs in groups.values() for ev in evs])
    return {key: pool(evs, stale) for key, evs in sorted(groups.items())}
