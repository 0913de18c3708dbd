"""Content hashes of the kernel sources an experiment runs, and staleness of evidence.

Torch-free: `flopkb validate` calls `current_hashes` and `stale_evidence` on any KB. Paths in a
hash map are relative to the KB's `kernels/` folder, with "/" separators, so evidence written on
one machine compares on another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from flopkb.kernelpkg import kernels_dir
from flopkb.verify import registry

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


def kernels_root(kb_root: Path | None) -> Path | None:
    """The KB root whose kernels/ an experiment runs: the KB's own, else the bundled one."""
    if kb_root is not None and kernels_dir(kb_root).is_dir():
        return kb_root
    return None


def kernel_files(kb_root: Path | None, experiment: str) -> list[str]:
    """The kernel source files of `experiment`, relative to kernels/, sorted.

    A registry entry ending in "/" expands to every kernel source (SOURCE_SUFFIXES) below that
    folder; an entry naming a
    missing file is kept, so its absence shows as MISSING in the hashes.
    """
    folder = kernels_dir(kernels_root(kb_root))
    files: set[str] = set()
    for entry in registry.get(experiment).kernels:
        if entry.endswith("/"):
            base = folder / entry
            if base.is_dir():
                files.update(
                    p.relative_to(folder).as_posix() for p in base.rglob("*")
                    if p.suffix in SOURCE_SUFFIXES and p.is_file()
                    and "__pycache__" not in p.parts
                )
        else:
            files.add(entry)
    return sorted(files)


def current_hashes(
    kb_root: Path | None, experiment: str, memo: dict[Path, str] | None = None
) -> dict[str, str]:
    """sha256 of each kernel source `experiment` runs, as they are now ("missing" if absent).

    `memo` (path -> digest) lets a caller that hashes many experiments read each file once:
    most share folders such as ssd/.
    """
    folder = kernels_dir(kernels_root(kb_root))
    memo = {} if memo is None else memo
    hashes: dict[str, str] = {}
    for rel in kernel_files(kb_root, experiment):
        path = folder / rel
        if path not in memo:
            memo[path] = sha256_file(path) if path.is_file() else MISSING
        hashes[rel] = memo[path]
    return hashes


@dataclass(frozen=True)
class Staleness:
    """Why one evidence record no longer describes the kernels in the KB."""

    evidence: str
    experiment: str
    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    def describe(self) -> str:
        parts = []
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


def stale_evidence(kb) -> list[Staleness]:
    """Evidence whose experiment's kernel sources changed since it was written.

    Only the newest evidence of each (claim, accelerator) counts: once `verify` has run again,
    the older records are history, superseded rather than stale, and kept without a warning.
    `kb` is a loaded KnowledgeBase; evidence naming an unknown experiment is skipped here (rule
    FKB502 reports it). Current hashes are computed once per experiment.
    """
    from flopkb.verify.evidence import latest

    current = {ev.id for ev in latest(kb).values()}
    cache: dict[str, dict[str, str]] = {}
    digests: dict[Path, str] = {}
    out: list[Staleness] = []
    for eid, ev in sorted(kb.evidence.items()):
        if eid not in current:
            continue
        if not registry.experiment_exists(ev.experiment):
            continue
        if ev.experiment not in cache:
            cache[ev.experiment] = current_hashes(kb.root, ev.experiment, digests)
        changed, added, removed = compare(dict(ev.kernel_hashes), cache[ev.experiment])
        if changed or added or removed:
            out.append(Staleness(eid, ev.experiment, changed, added, removed))
    return out
