"""Content hashes of the kernel sources an experiment runs, and staleness of evidence.

Torch-free: `flopkb validate` calls `current_hashes` and `stale_evidence` on any KB. Paths in a
hash map are relative to the KB's `kernels/` folder, with "/" separators, so evidence written on
one machine compares on another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from flopkb.evidence.catalogue import Catalogue
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.store import latest
from flopkb.kernelpkg import kernels_dir, kernels_root

MISSING = "missing"
# What counts as kernel source below an operator folder: Python/Triton and CUDA (a kernel built
# from a .cu at run time, e.g. reduction/cub_levels.cu, stales its evidence when it changes).
SOURCE_SUFFIXES = frozenset({".py", ".cu", ".cuh"})


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def kernel_files(kb_root: Path | None, info: ExperimentInfo) -> list[tuple[str, Path]]:
    """The kernel source files of experiment `info` as (path relative to kernels/, file),
    sorted.

    An entry ending in "/" expands to every kernel source (SOURCE_SUFFIXES) below that folder;
    an entry naming a missing file is kept, so its absence shows as MISSING in the hashes.
    Each entry is looked up in the KB's kernels/ or the bundled ones (`kernels_root`).
    """
    files: dict[str, Path] = {}
    for entry in info.kernels:
        folder = kernels_dir(kernels_root(kb_root, entry))
        if entry.endswith("/"):
            base = folder / entry
            if base.is_dir():
                for p in base.rglob("*"):
                    if (p.suffix in SOURCE_SUFFIXES and p.is_file()
                            and "__pycache__" not in p.parts):
                        files[p.relative_to(folder).as_posix()] = p
        else:
            files[entry] = folder / entry
    return sorted(files.items())


def current_hashes(
    kb_root: Path | None, info: ExperimentInfo, memo: dict[Path, str] | None = None
) -> dict[str, str]:
    """sha256 of each kernel source experiment `info` runs, as they are now ("missing" if
    absent).

    `memo` (path -> digest) lets a caller that hashes many experiments read each file once:
    most share folders such as ssd/.
    """
    memo = {} if memo is None else memo
    hashes: dict[str, str] = {}
    for rel, path in kernel_files(kb_root, info):
        if path not in memo:
            memo[path] = sha256_file(path) if path.is_file() else MISSING
        hashes[rel] = memo[path]
    return hashes


@dataclass(frozen=True)
class Staleness:
    """Why one evidence record no longer describes the kernels in the KB, or no longer the rule
    its experiment reads a verdict by."""

    evidence: str
    experiment: str
    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    # (recorded, current) judge_revision when the experiment's judging rule changed since
    judge: tuple[int, int] | None = None

    def describe(self) -> str:
        parts = []
        if self.judge:
            parts.append(f"judge revision {self.judge[0]} -> {self.judge[1]}")
        for label, paths in (("changed", self.changed), ("added", self.added),
                             ("removed", self.removed)):
            if paths:
                parts.append(f"{label}: {', '.join(paths)}")
        return "; ".join(parts)


def compare(recorded: dict[str, str], now: dict[str, str]) -> tuple[tuple[str, ...], ...]:
    """(changed, added, removed) paths between recorded and current hashes."""
    changed = tuple(sorted(p for p in recorded.keys() & now.keys() if recorded[p] != now[p]))
    added = tuple(sorted(now.keys() - recorded.keys()))
    removed = tuple(sorted(recorded.keys() - now.keys()))
    return changed, added, removed


def judge_changed(catalogue: Catalogue, ev) -> tuple[int, int] | None:
    """(recorded, current) judge_revision of `ev`'s experiment in `catalogue` (the KB's:
    `KnowledgeBase.catalogue()`) when they differ, else None (also None for an experiment the
    KB does not declare: FKB502 reports that)."""
    if not catalogue.exists(ev.experiment):
        return None
    now = catalogue.get(ev.experiment).judge_revision
    return None if ev.judge_revision == now else (ev.judge_revision, now)


def staleness(catalogue: Catalogue, ev, hashes_now: dict[str, str]
              ) -> Staleness | None:
    """Why `ev` is stale against the kernel hashes `hashes_now` of its experiment and the
    experiment's current judge revision; None when it is not."""
    changed, added, removed = compare(dict(ev.kernel_hashes), hashes_now)
    judge = judge_changed(catalogue, ev)
    if changed or added or removed or judge:
        return Staleness(ev.id, ev.experiment, changed, added, removed, judge)
    return None


def stale_evidence(kb) -> list[Staleness]:
    """Evidence whose experiment's kernel sources or judge revision changed since it was written.

    Only the newest evidence of each (claim, accelerator) counts: once `verify` has run again,
    the older records are history, superseded rather than stale, and kept without a warning.
    `kb` is a loaded KnowledgeBase; evidence naming an unknown experiment is skipped here (rule
    FKB502 reports it). Current hashes are computed once per experiment.
    """
    current = {ev.id for ev in latest(kb).values()}
    catalogue = kb.catalogue()
    cache: dict[str, dict[str, str]] = {}
    digests: dict[Path, str] = {}
    out: list[Staleness] = []
    for eid, ev in sorted(kb.evidence.items()):
        if eid not in current:
            continue
        if not catalogue.exists(ev.experiment):
            continue
        if ev.experiment not in cache:
            cache[ev.experiment] = current_hashes(kb.root, catalogue.get(ev.experiment), digests)
        found = staleness(catalogue, ev, cache[ev.experiment])
        if found:
            out.append(found)
    return out
