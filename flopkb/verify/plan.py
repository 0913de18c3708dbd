"""The plan of a run: claims -> jobs, one per experiment, in catalogue order.

A `Job` carries its experiment's resolved declaration (`ExperimentInfo`, from the KB's catalogue)
and the claim rows it judges: nothing after the plan looks an experiment up by name again.
What cannot run (an unknown experiment, a mistyped link, a claim linking none) is a `Result`
right away. Torch-free; the library never prints: progress goes through `on_event(kind,
payload)`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flopkb.evidence import links
from flopkb.evidence.declared import ExperimentInfo
from flopkb.grammar.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.hardware.model import HardwareModel, claim_inputs
from flopkb.model import ClassRecord, HardwareParameter

T = TypeVar("T")
Event = Callable[[str, dict[str, Any]], None]
CALIBRATION = "calibration"


def noop(kind: str, payload: dict[str, Any]) -> None:
    """The `on_event` of a caller that shows no progress."""
    return None


@dataclass
class Target:
    """One claim row linked to an experiment, with its magnitude parsed (or the parse error)."""

    claim: str
    record: ClassRecord
    row: HardwareParameter
    magnitude: Magnitude | None
    magnitude_error: str | None = None


@dataclass
class Job:
    """One experiment, resolved, and the claim rows of this KB it judges."""

    info: ExperimentInfo
    targets: list[Target] = field(default_factory=list)

    @property
    def experiment(self) -> str:
        return self.info.name


@dataclass
class Result:
    """What a run says about one claim (or a calibration): `flopkb verify --format json`'s row."""

    claim: str | None
    experiment: str
    verdict: str
    measured: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None
    evidence: str | None = None
    reason: str | None = None
    conditions: dict[str, Any] | None = None
    criterion: str | None = None
    cpu_check: list[dict[str, Any]] | None = None
    duration_s: float | None = None
    judgements: list[dict[str, Any]] | None = None
    implementation_sensitive: bool = False

    def as_dict(self) -> dict[str, Any]:
        data = {"claim": self.claim, "experiment": self.experiment, "verdict": self.verdict,
                "measured": self.measured, "expected": self.expected, "evidence": self.evidence,
                "reason": self.reason, "conditions": self.conditions, "criterion": self.criterion}
        if self.cpu_check is not None:
            data["cpu_check"] = self.cpu_check
        if self.duration_s is not None:
            data["duration_s"] = round(self.duration_s, 2)
        if self.judgements is not None:
            data["judgements"] = self.judgements
            data["implementation_sensitive"] = self.implementation_sensitive
        return data


def shard(items: Sequence[T], rank: int, world: int) -> list[T]:
    """Items i with i % world == rank: the torchrun partition (every rank computes the same one)."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"expected 0 <= rank < world, got rank {rank} of {world}")
    return [item for i, item in enumerate(items) if i % world == rank]


def plan(kb, claim: str | None = None, record: str | None = None,
         suites: Collection[str] | None = None, skip: Collection[str] = ()
         ) -> tuple[list[Job], list[Result]]:
    """Jobs (one per experiment, in catalogue order, with the claims of this KB linking to it)
    and results for what cannot run (an unknown experiment; with `claim`, a claim that links
    none). `claim` / `record` narrow the selection; `suites` (None: every suite) keeps the
    experiments of those suites, except where `claim` or `record` names what to run; claims in
    `skip` are left out (`verify --stale`: those whose evidence is fresh)."""
    known = kb.catalogue()
    jobs: dict[str, Job] = {}
    broken: list[Result] = []
    for cid, rec, row in kb.claims():
        if claim is not None and cid != claim:
            continue
        if cid in skip:
            continue
        if record is not None and rec.id != record:
            continue
        if row.verify is None:
            if claim is not None:
                broken.append(Result(cid, "-", "not-run", reason=(
                    f"{cid} links no experiment (no `verify:` in its row): nothing to run")))
            continue
        if not row.verify.runs:
            if claim is not None:
                broken.append(Result(cid, "-", "not-applicable", reason=(
                    f"{cid} is not verifiable on one GPU by design: {row.verify.not_applicable}")))
            continue
        name = row.verify.experiment
        if not known.exists(name):
            broken.append(Result(cid, name, "error", reason=(
                f"no experiment {name!r}, bundled or in the KB's experiments/ (see validate)")))
            continue
        info = known.get(name)
        try:
            mag, err = parse_magnitude(row.magnitude), None
        except MagnitudeError as exc:
            mag, err = None, str(exc)
        # a mistyped link is never judged by whatever its experiment happens to measure
        mistyped = links.link_problem(info.declaration, rec.id, row.verify.subject, mag)
        if mistyped:
            broken.append(Result(cid, name, "error", reason=mistyped))
            continue
        if suites is not None and claim is None and record is None and info.suite not in suites:
            continue
        jobs.setdefault(name, Job(info)).targets.append(Target(cid, rec, row, mag, err))
    ordered = [jobs[name] for name in known.experiments if name in jobs]
    return ordered, broken


def unlinked(kb) -> list[ExperimentInfo]:
    """The KB's own experiments no claim row of it links to (calibration excepted): checked on
    the CPU beside the plan. Bundled experiments belong to the bundled KB: a run on another KB
    neither runs nor reports them."""
    linked = {row.verify.experiment for _, _, row in kb.claims()
              if row.verify is not None and row.verify.runs}
    known = kb.catalogue()
    return [known.get(n) for n in known.own(kb.root) if n != CALIBRATION and n not in linked]


def not_applicable(kb, acc_id: str | None, target: Target, needs: Collection[str] = ()
                   ) -> str | None:
    """Why `target` does not apply on this accelerator, or None when it does. `needs`: the
    quantities its experiment needs from the part (`ExperimentInfo.needs`)."""
    if acc_id is None:
        return "the GPU matched no accelerator record"
    if acc_id not in target.record.affected_by_hardware:
        return f"{acc_id} is not in {target.record.id}'s affected_by_hardware"
    judged_on = target.row.verify.judged_on
    if judged_on and acc_id not in judged_on:
        # a part-specific figure: this part's own measurement is kept, never judged against it
        return (f"the claim is about {', '.join(judged_on)} (verify.judged_on); {acc_id}'s own "
                "measurement is recorded, not judged")
    acc = kb.accelerators.get(acc_id)
    # the row's quantity closed over computed quantities (and a derived row's formula), as the
    # validator's FKB603 reads it, plus what the experiment itself needs from the part
    needed = claim_inputs(HardwareModel(kb), target.row) | set(needs)
    for quantity in sorted(needed):
        spec = acc.specs.get(quantity) if acc else None
        if spec is not None and spec.value is None:
            return f"{acc_id} has no {quantity}" + (f" ({spec.note})" if spec.note else "")
    return None
