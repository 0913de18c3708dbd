"""What the git index removes from a KB, for a pre-commit run (`validate --changed`).

pre-commit never passes a hook the files a commit deletes, yet a deletion breaks what references
the file (a cited source) and what the file backed (deleted evidence leaves its `measured` row
without confirmation). So the deleted record files are read from the index, and their last
committed version (HEAD) is loaded, bounded like any record, for the ids it referenced.

Names come from git's `-z` output as bytes (a non-UTF-8 or quoted name is a name like any other)
and are compared with the KB's records folder after symlinks are resolved (git prints the real
top level; `--kb` may be given through a link). Paths never reach git as options.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from flopkb.kb import load_files
from flopkb.load import Limits
from flopkb.load.walk import RECORD_SUFFIXES, records_dir
from flopkb.referencing import referenced_by

_TIMEOUT_S = 30
# committed versions read (two git processes each); a commit deleting more gets a whole-KB report
MAX_COMMITTED_READS = 500


class StagedError(OSError):
    """git could not say what the index deletes (no repository, git missing, a timeout)."""


@dataclass
class Staged:
    """Record files deleted (or renamed away) in the index, in the KB's own spelling, and the ids
    their committed versions referenced (None: too many deletions to read, report on the whole
    KB)."""

    deleted: list[Path] = field(default_factory=list)
    referenced: set[str] | None = field(default_factory=set)
    # deleted experiment declarations and kernel files: `experiments/x.yaml`, `kernels/op/k.py`
    sources: list[str] = field(default_factory=list)


def _git(args: list[str | bytes], cwd: str | bytes) -> bytes:
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, check=True, timeout=_TIMEOUT_S, cwd=cwd
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise StagedError(str(exc)) from exc


def _committed(top: bytes, name: bytes, limits: Limits) -> bytes | None:
    """The file's content at HEAD, or None when it is over the size limit or not there."""
    spec = b"HEAD:" + name
    try:
        size = int(_git(["cat-file", "-s", spec], top))
        if size > limits.max_bytes:
            return None
        return _git(["cat-file", "blob", spec], top)
    except (StagedError, ValueError):
        return None


def staged_deletions(kb_root: Path, limits: Limits | None = None) -> Staged:
    """The record files of `kb_root` that the index deletes, and what they referenced; and the
    experiment declarations and kernel files it deletes (what they fed is reported too)."""
    limits = limits or Limits()
    top = _git(["rev-parse", "--show-toplevel"], str(kb_root)).rstrip(b"\n")
    names = _git(["diff", "--cached", "--name-only", "--diff-filter=DR", "--no-renames", "-z"], top)
    records = records_dir(kb_root)
    real_records = os.fsencode(os.path.realpath(records))
    suffixes = tuple(os.fsencode(s) for s in RECORD_SUFFIXES)
    out = Staged()
    ours: list[tuple[bytes, bytes]] = []
    sources = {folder: os.fsencode(os.path.realpath(kb_root / folder))
               for folder in ("experiments", "kernels")}  # fmt: skip
    for name in filter(None, names.split(b"\0")):
        real = os.path.join(top, name)
        for folder, base in sources.items():
            if real.startswith(base + b"/"):
                rel = os.fsdecode(os.path.relpath(real, base)).replace(os.sep, "/")
                out.sources.append(f"{folder}/{rel}")
        if not real.startswith(real_records + b"/") or not real.endswith(suffixes):
            continue
        rel = os.path.relpath(real, real_records)
        out.deleted.append(records / os.fsdecode(rel))
        ours.append((name, rel))
    if len(ours) > MAX_COMMITTED_READS:
        out.referenced = None
        return out
    blobs = [(rel, blob) for name, rel in ours if (blob := _committed(top, name, limits))]
    if blobs:
        out.referenced = _references_of(blobs, limits)
    return out


def _references_of(blobs: list[tuple[bytes, bytes]], limits: Limits) -> set[str]:
    """Ids the given committed files referenced, loaded as records (bounded, never executed)."""
    with tempfile.TemporaryDirectory(prefix="flopkb-staged-") as tmp:
        base = os.fsencode(tmp)
        paths = []
        for rel, blob in blobs:
            path = os.path.join(base, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(blob)
            paths.append(Path(os.fsdecode(path)))
        kb, _ = load_files(paths, limits=limits)
        return referenced_by(kb, set(kb.records))
