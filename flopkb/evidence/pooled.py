"""Pooled verdicts: a claim's verdict on an accelerator from all of its evidence, never the latest.

Torch-free. Per (claim, accelerator), the runs that speak are the trusted evidence records
(plausible time, verdict re-derives: `kb.implausible_evidence()`, `kb.untrusted_evidence()`) that
measured
something (confirmed, refuted, inconclusive) and whose kernel sources are the current ones. When
no such run is fresh, the stale measuring runs speak (flagged `stale`). When every run agrees, the
pooled verdict is theirs (`confirmed (2/2 runs)`); when they differ it is `disagreeing`, with
each run's verdict listed. Where nothing measured, the newest record's verdict stands (error,
not-run, not-applicable).

The pooled figure: the rounds of every run that speaks, merged as one measurement by the rule
that merges one run's rounds (`flopkb.evidence.rounds`: the median of the values, the band
[min low, max high]) and judged again by the experiment's own `judge` against the claim's current
magnitude. Its interval covers the spread between runs (processes, machines) as one run's covers
the spread between its rounds: the committed H200 runs show a run's value leaving another run's
band, and no number of rounds inside one process closes that (docs/verify.md, "Rounds").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flopkb.evidence.hashing import current_hashes, judge_changed, staleness
from flopkb.evidence.rederive import claim_magnitude, judge_stored
from flopkb.evidence.rounds import merge_rounds
from flopkb.grammar.text import plain_g
from flopkb.model import EvidenceRecord, Measured

MEASURING = frozenset({"confirmed", "refuted", "inconclusive"})
DISAGREEING = "disagreeing"


@dataclass(frozen=True)
class Figure:
    """The runs' rounds merged and judged again: the pooled interval and its verdict."""

    verdict: str
    measured: Measured
    runs: int
    rounds: int

    def text(self) -> str:
        """`11.8x [11.7, 11.9], 9 rounds of 3 runs: confirmed`."""
        m = self.measured
        unit = m.unit if m.unit in ("x", "%") else f" {m.unit}" if m.unit else ""
        band = f" [{_num(m.low)}, {_num(m.high)}]"
        runs = "run" if self.runs == 1 else "runs"
        return (f"{_num(m.value)}{unit}{band}, {self.rounds} rounds of {self.runs} {runs}: "
                f"{self.verdict}")

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "measured": self.measured.model_dump(mode="json"),
                "runs": self.runs, "rounds": self.rounds}


def _num(x: float | None) -> str:
    """Three significant digits, never in exponent form (`19600`, not `1.96e+04`), as the
    evidence pictures print them (`flopkb.grammar.text.plain_g`)."""
    return "open" if x is None else plain_g(x, 3)


@dataclass(frozen=True)
class Pooled:
    """One claim's verdict on one accelerator, with the runs it was pooled from (newest first)."""

    verdict: str
    runs: list[EvidenceRecord] = field(default_factory=list)
    stale: bool = False
    figure: Figure | None = None

    @property
    def measuring(self) -> list[EvidenceRecord]:
        return [ev for ev in self.runs if ev.verdict.value in MEASURING]

    @property
    def agreeing(self) -> int:
        return sum(1 for ev in self.runs if ev.verdict.value == self.verdict)

    @property
    def implementation_sensitive(self) -> bool:
        """Whether the runs that judged several implementations found them to differ. Runs that
        store rounds (schema 4) decide it when there are any: their rule counts only verdicts
        that differ beyond the spread of the rounds (confirmed beside refuted), where a one-round
        run counted any difference."""
        return bool(self.sensitive_runs)

    @property
    def sensitive_runs(self) -> list[EvidenceRecord]:
        """The runs whose flag `implementation_sensitive` reads (newest first)."""
        judged = [ev for ev in self.runs if len(ev.judgements) > 1]
        with_rounds = [ev for ev in judged if ev.rounds]
        return [ev for ev in (with_rounds or judged) if ev.implementation_sensitive]

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
            "pooled": self.figure.as_dict() if self.figure else None,
            "per_run": [{"evidence": ev.id, "verdict": ev.verdict.value,
                         "timestamp": ev.timestamp.isoformat().replace("+00:00", "Z"),
                         "implementation_sensitive": ev.implementation_sensitive,
                         "measured": ev.measured.model_dump(mode="json") if ev.measured else None}
                        for ev in self.runs],
        }


def _stale_ids(kb: Any, records: list[EvidenceRecord]) -> set[str]:
    cache: dict[str, dict[str, str]] = {}
    out = set()
    catalogue = kb.catalogue()
    for ev in records:
        if not catalogue.exists(ev.experiment):
            continue
        if ev.experiment not in cache:
            cache[ev.experiment] = current_hashes(kb.root, catalogue.get(ev.experiment))
        if staleness(catalogue, ev, cache[ev.experiment]):
            out.add(ev.id)
    return out


def figure(kb: Any, runs: list[EvidenceRecord]) -> Figure | None:
    """The pooled figure of `runs` (one claim, one accelerator) from those that store their rounds
    (schema 4; older runs keep one merged measurement and stay out): None unless at least two
    do, all measured the same experiment under the same conditions, and the experiment's judge
    reads their merged rounds (runs judged under another judge revision stay out)."""
    # runs read under an earlier judge revision are not re-read by the current rule
    runs = [ev for ev in runs if ev.rounds and not judge_changed(kb.catalogue(), ev)]
    if len(runs) < 2:
        return None
    first = runs[0]
    if any(ev.experiment != first.experiment or dict(ev.conditions) != dict(first.conditions)
           for ev in runs):
        return None
    mag = claim_magnitude(kb, first)
    if mag is None:
        return None
    rounds = [r.model_dump(mode="json") for ev in runs for r in ev.rounds]
    try:
        data, sweep = merge_rounds(rounds)
        judged = judge_stored(kb, first, data, sweep, mag)
    except Exception:
        # stored numbers the judge cannot read together (rederive reports per record): no figure
        return None
    if judged.measured is None or judged.measured.value is None:
        return None
    six = lambda x: None if x is None else float(f"{x:.6g}")  # noqa: E731  (as evidence stores)
    m = judged.measured
    measured = Measured(value=six(m.value), low=six(m.low), high=six(m.high), unit=judged.unit,
                        what=judged.what or None)
    return Figure(judged.verdict, measured, len(runs), len(rounds))


def pool(records: list[EvidenceRecord], stale: set[str], kb: Any = None) -> Pooled:
    """The pooled verdict of one (claim, accelerator)'s records (with `kb`, its figure too)."""
    newest_first = sorted(records, key=lambda ev: (ev.timestamp, ev.id), reverse=True)
    measuring = [ev for ev in newest_first if ev.verdict.value in MEASURING]
    if not measuring:
        return Pooled(newest_first[0].verdict.value, newest_first[:1])
    fresh = [ev for ev in measuring if ev.id not in stale]
    runs = fresh or measuring
    verdicts = {ev.verdict.value for ev in runs}
    verdict = verdicts.pop() if len(verdicts) == 1 else DISAGREEING
    return Pooled(verdict, runs, stale=not fresh,
                  figure=figure(kb, runs) if kb is not None else None)


def pooled(kb: Any, claim: str | None = None,
           keep: Callable[[EvidenceRecord], bool] | None = None
           ) -> dict[tuple[str, str], Pooled]:
    """{(claim, accelerator): Pooled} over the trusted evidence of `kb` (calibrations left out;
    an unmatched GPU keys as "unknown-gpu"). `keep` narrows the records that may speak (and
    leaves the figures out: validate's rules ask for verdicts only). Without `keep`, computed
    once per state of `kb.records` (graph queries ask per claim), figures included."""
    if keep is None:
        every = kb.per_state("pooled", lambda: _pool_all(kb, None, figures=True))
    else:
        every = _pool_all(kb, keep, figures=False)
    if claim is None:
        return dict(every)
    return {k: v for k, v in every.items() if k[0] == claim}


def _pool_all(kb: Any, keep: Callable[[EvidenceRecord], bool] | None, figures: bool
              ) -> dict[tuple[str, str], Pooled]:
    implausible, untrusted = kb.implausible_evidence(), kb.untrusted_evidence()
    catalogue = kb.catalogue()
    groups: dict[tuple[str, str], list[EvidenceRecord]] = {}
    for ev in kb.evidence.values():
        if ev.claim is None:
            continue
        if not catalogue.exists(ev.experiment):
            # no declaration loads (FKB502, or FKB507 for one with errors): nothing judges it
            continue
        if ev.id in implausible or ev.id in untrusted or (keep is not None and not keep(ev)):
            continue
        groups.setdefault((ev.claim, ev.accelerator or "unknown-gpu"), []).append(ev)
    stale = _stale_ids(kb, [ev for evs in groups.values() for ev in evs])
    return {key: pool(evs, stale, kb if figures else None)
            for key, evs in sorted(groups.items())}


def latest_verdicts(kb: Any) -> dict[str, dict[str, str]]:
    """{claim: {accelerator: pooled verdict}} over all of each pair's trusted runs: runs that
    disagree give `disagreeing`, never the latest one's.

    Evidence from an unmatched GPU is listed under "unknown-gpu"; calibrations are left out.
    """
    out: dict[str, dict[str, str]] = {}
    for (claim, acc), p in pooled(kb).items():
        out.setdefault(claim, {})[acc] = p.verdict
    return out


def confirmed_on(kb: Any, claim: str, accelerators: list[str] | None = None
                 ) -> list[EvidenceRecord]:
    """The runs confirming `claim` on each accelerator whose pooled verdict is confirmed,
    restricted to `accelerators` when given (rule 3: a `measured` basis needs one)."""
    return sorted(
        (ev for (c, acc), p in pooled(kb, claim).items()
         if p.verdict == "confirmed" and (accelerators is None or acc in accelerators)
         for ev in p.measuring),
        key=lambda ev: ev.id,
    )
