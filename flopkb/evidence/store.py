"""Evidence files: ids, atomic writes, and the latest evidence of each claim in a loaded KB.

Torch-free. A write goes to a hidden temp file in the evidence folder, is flushed and fsync'ed,
then renamed over the final name with os.replace (atomic on POSIX and Windows); any exception,
Ctrl-C included, removes the temp file, so an interrupted run never leaves a partial record.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from flopkb.atomic import atomic_write_text
from flopkb.model import EvidenceRecord
from flopkb.schema_export import schema_header

MAX_ID = 120
EVIDENCE_FOLDER = ("records", "evidence")


def evidence_dir(kb_root: Path) -> Path:
    return kb_root.joinpath(*EVIDENCE_FOLDER)


def _slug(text: str) -> str:
    return re.sub(r"-{3,}", "--", re.sub(r"[^a-z0-9-]+", "-", text.lower())).strip("-")


def stamp(when: dt.datetime) -> str:
    """UTC timestamp as used in ids: 20261130t031500z."""
    return when.astimezone(dt.timezone.utc).strftime("%Y%m%dt%H%M%Sz")


def evidence_id(claim: str | None, accelerator: str | None, when: dt.datetime) -> str:
    """`ev-<claim-slug>-<accelerator>-<UTC timestamp>`; the claim's "/" becomes "--".

    A calibration (no claim) is `ev-calibration-...`; an unmatched GPU is `unknown-gpu`. Ids
    longer than the id limit keep a hash of the claim so they stay unique.
    """
    claim_slug = _slug(claim.replace("/", "--")) if claim else "calibration"
    tail = f"-{_slug(accelerator or 'unknown-gpu')}-{stamp(when)}"
    eid = f"ev-{claim_slug}{tail}"
    if len(eid) > MAX_ID:
        digest = hashlib.sha256(claim_slug.encode()).hexdigest()[:8]
        keep = MAX_ID - len(tail) - len("ev-") - len(digest) - 1
        eid = f"ev-{claim_slug[:keep].rstrip('-')}-{digest}{tail}"
    return eid


def unique_id(folder: Path, eid: str) -> str:
    """`eid`, or `eid-2`, `eid-3`, ... when a file of that stem already exists in `folder`."""
    candidate, n = eid, 1
    while (folder / f"{candidate}.yaml").exists():
        n += 1
        candidate = f"{eid}-{n}"
    return candidate


class _NoAliasDumper(yaml.SafeDumper):
    """The KB loader refuses anchors and aliases: repeated values are written out in full."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(record: EvidenceRecord) -> str:
    data = record.model_dump(mode="json")
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=100)


def write_evidence(record: EvidenceRecord, folder: Path) -> Path:
    """Validate-by-construction record -> `<folder>/<id>.yaml`, atomically; returns the path."""
    path = folder / f"{record.id}.yaml"
    return atomic_write_text(path, schema_header(path) + to_yaml(record))


# Verdicts that measured something; error, not-run and not-applicable did not.
MEASURING = frozenset({"confirmed", "refuted", "inconclusive"})


def latest(
    kb, claim: str | None = None, *, measuring_only: bool = False
) -> dict[tuple[str | None, str | None], EvidenceRecord]:
    """Latest evidence per (claim, accelerator), optionally for one claim.

    `measuring_only` skips runs that measured nothing (an out-of-memory error does not withdraw
    an earlier confirmation; a later refutation does). Evidence whose timestamp cannot be true
    (future, or before its accelerator existed: `kb.implausible_evidence()`) or whose verdict does
    not re-derive from its own numbers (`kb.untrusted_evidence()`) is never latest.
    """
    best: dict[tuple[str | None, str | None], EvidenceRecord] = {}
    implausible = kb.implausible_evidence()
    untrusted = kb.untrusted_evidence()
    for ev in kb.evidence.values():
        if claim is not None and ev.claim != claim:
            continue
        if ev.id in implausible or ev.id in untrusted:
            continue
        if measuring_only and ev.verdict.value not in MEASURING:
            continue
        key = (ev.claim, ev.accelerator)
        if key not in best or (ev.timestamp, ev.id) > (best[key].timestamp, best[key].id):
            best[key] = ev
    return best


def current(kb) -> dict[tuple[str | None, str | None], EvidenceRecord]:
    """The evidence that speaks for each (claim, accelerator): the newest that measured something
    (confirmed, refuted, inconclusive), else the newest. The graph's `latest_verdicts` reads
    its edges by the same rule, so `flopkb claims` and `graph status` agree."""
    out = latest(kb)
    out.update(latest(kb, measuring_only=True))
    return out


def summary(ev: EvidenceRecord) -> dict[str, Any]:
    """The short form of one evidence record used in `flopkb verify --format json`."""
    return {
        "claim": ev.claim,
        "experiment": ev.experiment,
        "verdict": ev.verdict.value,
        "measured": ev.measured.model_dump(mode="json") if ev.measured else None,
        "expected": ev.expected,
        "evidence": ev.id,
    }
