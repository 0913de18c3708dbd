"""What the generated blocks read: the committed evidence, the KB, and the results files that
bench/results/MANIFEST.yaml names for each block (never a glob, so a new file changes nothing
until the manifest says it is the current one)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from flopkb.evidence.pooled import Pooled, pooled
from flopkb.kb import load_files, load_kb
from flopkb.model import EvidenceRecord

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = Path("bench") / "results" / "MANIFEST.yaml"
# The accelerator every H200 figure is about.
ACCELERATOR = "h200-sxm"


class MissingFigure(LookupError):
    """A figure a page needs is not in its source (the sweep, the results or the manifest
    changed): the generator stops and names it rather than write a stale figure."""


def command_of(e: EvidenceRecord) -> str:
    """The verify command an evidence record was written by, without the output options."""
    return re.sub(r" --(format json|out \S+)", "", e.command)


@dataclass
class Sources:
    """Everything the blocks read, each loaded once. `read` lists the (block, role) pairs of the
    manifest that blocks asked for, so a test can hold the manifest to what the blocks read."""

    root: Path = ROOT
    read: set[tuple[str, str]] = field(default_factory=set)

    @cached_property
    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.is_file():
            raise MissingFigure(f"no {MANIFEST}")
        return yaml.safe_load(path.read_text(encoding="utf-8"))

    @property
    def results(self) -> Path:
        return self.root / "bench" / "results"

    def names(self, block: str, role: str) -> list[str]:
        """The results files (relative to bench/results/) the manifest gives `block` as `role`."""
        entry = (self.manifest.get("blocks") or {}).get(block) or {}
        if role not in entry:
            raise MissingFigure(f"{MANIFEST}: block {block!r} names no {role!r}")
        self.read.add((block, role))
        value = entry[role]
        return list(value) if isinstance(value, list) else [value]

    def path(self, block: str, role: str) -> Path:
        (name,) = self.names(block, role)
        path = self.results / name
        if not path.exists():
            raise MissingFigure(f"{MANIFEST}: {block}.{role} names {name}, which does not exist")
        return path

    def shown(self, path: Path) -> str:
        """A path as the pages cite it, relative to the repository."""
        return path.relative_to(self.root).as_posix()

    def json(self, block: str, role: str) -> tuple[str, dict[str, Any]]:
        """(the path as cited, the parsed file) of one JSON file of `block`."""
        path = self.path(block, role)
        return self.shown(path), json.loads(path.read_text(encoding="utf-8"))

    def text(self, block: str, role: str) -> tuple[str, str]:
        path = self.path(block, role)
        return self.shown(path), path.read_text(encoding="utf-8")

    @cached_property
    def all_evidence(self) -> list[EvidenceRecord]:
        paths = sorted((self.root / "records" / "evidence").glob("*.yaml"))
        kb, findings = load_files(paths)
        if findings:
            raise SystemExit("\n".join(f"{f.file}: {f.rule} {f.message}" for f in findings))
        return list(kb.evidence.values())

    @cached_property
    def evidence(self) -> list[EvidenceRecord]:
        """The full-run (not --quick) evidence on the accelerator."""
        return [e for e in self.all_evidence if e.accelerator == ACCELERATOR
                and not (e.conditions or {}).get("quick")]

    @cached_property
    def kb(self) -> Any:
        """The KB at `root`; a loading error stops the generator, naming it."""
        kb, findings = load_kb(self.root)
        errors = [f for f in findings if f.severity.value == "error"]
        if errors:
            raise SystemExit("\n".join(f"{f.file}: {f.rule} {f.message}" for f in errors))
        return kb

    @cached_property
    def pooled(self) -> dict[str, Pooled]:
        """claim -> its pooled verdict on the accelerator (every trusted fresh run), as
        `flopkb claims` shows it."""
        return {c: p for (c, acc), p in pooled(self.kb).items() if acc == ACCELERATOR}

    def runs(self, claim: str) -> list[EvidenceRecord]:
        """Every full-run evidence record of `claim` on the accelerator, oldest first."""
        return sorted((e for e in self.evidence if e.claim == claim),
                      key=lambda e: (e.timestamp, e.id))

    def of(self, claim: str | None) -> EvidenceRecord:
        """The newest full-run evidence of `claim` (None: the calibration)."""
        found = [e for e in self.evidence if e.claim == claim]
        if not found:
            raise MissingFigure(f"no evidence for {claim or 'the calibration'} on {ACCELERATOR}")
        return max(found, key=lambda e: (e.timestamp, e.id))

    def listed_runs(self, block: str, role: str) -> list[dict[str, Any]]:
        """The verify runs the manifest gives `block` as `role` (each process's JSON, listing
        the evidence it wrote): JSON path, evidence ids, start, duration and command."""
        runs = []
        for name in self.names(block, role):
            path = self.results / name
            data = json.loads(path.read_text(encoding="utf-8"))
            ids = {r["evidence"] for r in data.get("results", []) if r.get("evidence")}
            mine = [e for e in self.evidence if e.id in ids]
            if not mine:
                raise MissingFigure(f"{name}: none of its evidence is in records/evidence/")
            runs.append({"json": self.shown(path), "ids": ids,
                         "start": min(e.timestamp for e in mine),
                         "duration_s": data.get("duration_s"), "command": command_of(mine[0])})
        return sorted(runs, key=lambda r: r["start"])

    def verify_runs(self, block: str) -> list[dict[str, Any]]:
        """Every run whose evidence is committed, oldest first: those the manifest gives `block`
        as `runs`, then the evidence none of them wrote as one run per (date, command)."""
        runs = self.listed_runs(block, "runs")
        listed = set().union(*(r["ids"] for r in runs))
        rest: dict[tuple[str, str], set[str]] = {}
        for e in self.evidence:
            if e.id not in listed:
                rest.setdefault((e.timestamp.date().isoformat(), e.command), set()).add(e.id)
        for ids in rest.values():
            mine = [e for e in self.evidence if e.id in ids]
            runs.append({"json": None, "ids": ids, "start": min(e.timestamp for e in mine),
                         "duration_s": None, "command": command_of(mine[0])})
        return sorted(runs, key=lambda r: r["start"])
