"""Content hashes of the kernel sources an experiment runs, and staleness of evidence.

Torch-free: `flopkb validate` calls `current_hashes` and `stale_evidence` on any KB. Paths in a
hash map are relative to the KB's `kernels/` folder, with "/" separators, so evidence written on
one machine compares on another.

A kernel moved is not a kernel changed: `compare` pairs a recorded path that is gone with a
current path that is new when their sha256 digests are equal (one-to-one, as git's exact rename
detection does), and reports the pair as moved, which does not stale the evidence. Paths on both
sides still compare by path, so swapping two files' contents is a change to both.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from flopkb.evidence.catalogue import Catalogue
from flopkb.evidence.declared import SOURCE_SUFFIXES, ExperimentInfo
from flopkb.evidence.store import latest
from flopkb.kernelpkg import (
    MAX_KERNEL_ENTRIES,
    inside,
    kernel_entry_problem,
    kernels_dir,
    kernels_root,
    walk_sources,
)

MISSING = "missing"


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
    Each entry is looked up in the KB's kernels/ or the bundled ones (`kernels_root`). Nothing
    outside that folder is ever read: an entry that is no plain relative path
    (`kernel_entry_problem`), and a file a link leads out of the folder, are left out (validate
    reports both, FKB530), and a folder's walk stops at MAX_KERNEL_FILES.
    """
    files: dict[str, Path] = {}
    for entry in info.kernels[:MAX_KERNEL_ENTRIES]:
        if kernel_entry_problem(entry):
            continue
        folder = kernels_dir(kernels_root(kb_root, entry))
        base = folder / entry
        if entry.endswith("/"):
            if base.is_dir() and inside(folder, base):
                for p in walk_sources(base, SOURCE_SUFFIXES):
                    if p.is_file() and inside(folder, p):
                        files[p.relative_to(folder).as_posix()] = p
        elif not base.exists() or inside(folder, base):
            files[entry] = base
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
    # (recorded path, current path) of files moved byte-identical: informational, not stale
    moved: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        parts = []
        if self.judge:
            parts.append(f"judge revision {self.judge[0]} -> {self.judge[1]}")
        for label, paths in (("changed", self.changed), ("added", self.added),
                             ("removed", self.removed)):
            if paths:
                parts.append(f"{label}: {', '.join(paths)}")
        if self.moved:
            parts.append("moved, same content: "
                         + ", ".join(f"{old} -> {new}" for old, new in self.moved))
        return "; ".join(parts)


class Comparison(NamedTuple):
    """Recorded vs current kernel hashes: paths whose content changed, paths only now, paths
    only then, and (then, now) pairs of one content that moved."""

    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    moved: tuple[tuple[str, str], ...]


def compare(recorded: dict[str, str], now: dict[str, str]) -> Comparison:
    """Recorded vs current hashes. A path on both sides compares by path; a recorded path gone
    and a current path new are one file moved when their digests are equal (`pair_moves`)."""
    changed = tuple(sorted(p for p in recorded.keys() & now.keys() if recorded[p] != now[p]))
    gone = {p: recorded[p] for p in recorded.keys() - now.keys()}
    new = {p: now[p] for p in now.keys() - recorded.keys()}
    moved = pair_moves(gone, new)
    added = tuple(sorted(new.keys() - {b for _, b in moved}))
    removed = tuple(sorted(gone.keys() - {a for a, _ in moved}))
    return Comparison(changed, added, removed, moved)


def pair_moves(gone: dict[str, str], new: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """(gone path, new path) pairs of equal digest, each path in at most one pair.

    Among several files of one content (empty `__init__.py` files, say) a gone path pairs first
    with a new path of the same file name, then the rest in sorted order; what is left over
    stays removed or added. A MISSING entry (the file was not there to hash) pairs with nothing.
    """
    by_digest: dict[str, list[str]] = {}
    for path, digest in sorted(new.items()):
        if digest != MISSING:
            by_digest.setdefault(digest, []).append(path)
    pairs: list[tuple[str, str]] = []
    for digest, candidates in by_digest.items():
        olds = sorted(p for p, d in gone.items() if d == digest)
        for same_name in (True, False):
            for old in list(olds):
                name = old.rsplit("/", 1)[-1]
                match = next((c for c in candidates
                              if not same_name or c.rsplit("/", 1)[-1] == name), None)
                if match is not None:
                    pairs.append((old, match))
                    olds.remove(old)
                    candidates.remove(match)
    return tuple(sorted(pairs))


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
    experiment's current judge revision; None when it is not (a file only moved, content
    unchanged, is no reason: it is listed in `moved` when there is another)."""
    found = compare(dict(ev.kernel_hashes), hashes_now)
    judge = judge_changed(catalogue, ev)
    if found.changed or found.added or found.removed or judge:
        return Staleness(ev.id, ev.experiment, found.changed, found.added, found.removed, judge,
                         found.moved)
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


def fresh_claims(kb, accelerator: str | None) -> set[str]:
    """Claims whose newest evidence on `accelerator` still describes the KB (not in
    `stale_evidence`) and names an experiment the KB declares: `verify --stale` runs the rest."""
    stale = {s.evidence for s in stale_evidence(kb)}
    catalogue = kb.catalogue()
    return {claim for (claim, acc), ev in latest(kb).items()
            if claim is not None and acc == accelerator and ev.id not in stale
            and catalogue.exists(ev.experiment)}
