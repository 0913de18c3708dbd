"""The filesystem walk that finds record files: regular files inside the KB, and a bounded walk.

The rules (README, "The filesystem walk"):

- Only `*.yaml` / `*.yml` entries are candidates; hidden files and folders (`.name`) are skipped.
- A candidate that is a FIFO, a device or a socket is a finding (FKB130) and is never opened: a
  FIFO would block the reader forever.
- A symlink is resolved without opening anything. One that resolves outside the KB root, dangles
  or loops is a finding (FKB131) located at the link, and its target is never read, so nothing
  outside the KB can reach a finding or an annotation. One that resolves to a regular file inside
  the KB root is read as that file (findings name the target; a link to a record already in
  `records/` is that record once, not a duplicate). A symlink to a folder is never followed:
  outside the KB it is FKB131, inside a warning (FKB134).
- A folder that cannot be listed is a finding (FKB132), never skipped in silence.
- The walk is bounded (WalkLimits: entries looked at, folder depth). Past the entry bound the walk
  stops and reads nothing (FKB133), so `--kb /` answers in about a second instead of walking the
  disk and parsing every YAML file on it; a folder past the depth bound is FKB133 and not walked.

Reading the files found is `flopkb.load.safefile`'s job (lstat, O_NOFOLLOW, O_NONBLOCK, fstat).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from flopkb.findings import Finding
from flopkb.load.safefile import describe
from flopkb.rules import finding_of

RECORD_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class WalkLimits:
    """Bounds of one walk. 100,000 entries is ten times the KB size flopkb is built for (10^4
    records, plus their evidence plots); 16 folder levels is far beyond `records/<kind>/`."""

    max_entries: int = 100_000
    max_depth: int = 16


@dataclass
class Walk:
    """Record files to read (sorted) and the findings of the walk itself."""

    files: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def display_path(path: Path | str, cwd: str | None = None) -> str:
    """`path` relative to the working directory when it lies inside it, else as given.

    `cwd`: `os.getcwd()` when the caller has it (a system call each, 0.5 s at 2 x 10^4 files).
    """
    text = str(path)
    cwd = (cwd if cwd is not None else os.getcwd()) + os.sep
    return text[len(cwd) :] if text.startswith(cwd) else text


def records_dir(root: Path) -> Path:
    """The folder holding a KB's records: `root/records`, or `root` itself when it has none."""
    return root / "records" if (root / "records").is_dir() else root


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _finding(code: str, path: str, message: str, hint: str | None = None) -> Finding:
    return finding_of(code, display_path(path), 0, 0, None, message, hint)


def check_link(link: str, inside: str) -> tuple[str | None, Finding | None]:
    """(the file to read instead of symlink `link`, or None; the finding, or None).

    `inside` is the real path of the KB root. Nothing is opened: only the link chain is resolved
    and the final target `lstat`ed.
    """
    try:
        shown = os.readlink(link)
    except OSError:
        shown = "?"
    target = os.path.realpath(link)
    if not _inside(target, inside):
        return None, _finding(
            "FKB131", link, f"symlink to {shown!r} resolves outside the KB root; not followed",
            "records are files inside the KB: copy the file in, or drop the link",
        )  # fmt: skip
    try:
        mode = os.lstat(target).st_mode
    except OSError:
        return None, _finding("FKB131", link, f"symlink to {shown!r} dangles; not followed")
    if stat.S_ISLNK(mode):
        return None, _finding("FKB131", link, f"symlink to {shown!r} loops; not followed")
    if stat.S_ISREG(mode):
        return target, None
    if stat.S_ISDIR(mode):
        return None, _finding(
            "FKB134", link, f"symlink to the folder {shown!r} inside the KB; not followed",
            "its files are walked where they really are (if that is under records/)",
        )  # fmt: skip
    return None, _finding(
        "FKB130", link, f"symlink to {shown!r}, which is {describe(mode)}; never opened"
    )


def check_file(path: Path, inside: Path) -> tuple[Path | None, Finding | None]:
    """One record file given by name (not found by a walk), checked as the walk checks entries."""
    text = str(path)
    try:
        mode = os.lstat(text).st_mode
    except OSError:
        # the reader reports it (FKB101) with the operating system's reason
        return path, None
    if stat.S_ISLNK(mode):
        root = os.path.realpath(inside)
        target, finding = check_link(text, root)
        return (inside / os.path.relpath(target, root) if target else None), finding
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path, None
    return None, _finding("FKB130", text, f"{describe(mode)}, not a regular file; never opened")


def walk_records(root: Path, limits: WalkLimits = WalkLimits()) -> Walk:
    """The record files of the KB at `root` (its `records/`, or `root` itself without one)."""
    return walk_folder(records_dir(root), root, limits)


def walk_folder(folder: Path, inside: Path, limits: WalkLimits = WalkLimits()) -> Walk:
    """Every record file under `folder`, symlinks contained in `inside` (the KB root)."""
    walk = Walk()
    base, root = str(folder), os.path.realpath(inside)
    if os.path.islink(base) and not _inside(os.path.realpath(base), root):
        walk.findings.append(check_link(base, root)[1])  # type: ignore[arg-type]
        return walk
    found: list[str] = []
    stack: list[tuple[str, int]] = [(base, 0)]
    seen = 0
    while stack:
        current, depth = stack.pop()
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError as exc:
            walk.findings.append(
                _finding("FKB132", current, f"cannot list the folder: {exc.strerror or exc}")
            )
            continue
        seen += len(entries)
        if seen > limits.max_entries:
            # a KB cut at an arbitrary entry is no KB (references would dangle at random), and
            # what the walk met on the way is noise beside the one thing to say
            return Walk(findings=[
                _finding(
                    "FKB133", base,
                    f"the walk stopped after {limits.max_entries} entries (its limit); "
                    "no record was read",
                    "is this the KB you meant? --kb names the folder that holds records/",
                )
            ])  # fmt: skip
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if entry.is_symlink():
                if name.endswith(RECORD_SUFFIXES) or os.path.isdir(entry.path):
                    target, finding = check_link(entry.path, root)
                    if target is not None and name.endswith(RECORD_SUFFIXES):
                        # spelled under the root as given, so a link to a record in records/
                        # and the record itself are one path (loaded once)
                        found.append(os.path.join(str(inside), os.path.relpath(target, root)))
                    elif finding is not None:
                        walk.findings.append(finding)
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 > limits.max_depth:
                    walk.findings.append(
                        _finding(
                            "FKB133", entry.path,
                            f"folder deeper than {limits.max_depth} levels; not walked",
                        )
                    )  # fmt: skip
                else:
                    stack.append((entry.path, depth + 1))
            elif name.endswith(RECORD_SUFFIXES):
                if entry.is_file(follow_symlinks=False):
                    found.append(entry.path)
                else:
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except OSError:
                        continue  # gone since the listing: nothing to read
                    walk.findings.append(
                        _finding(
                            "FKB130", entry.path,
                            f"{describe(mode)}, not a regular file; never opened",
                        )
                    )  # fmt: skip
    walk.files = [Path(p) for p in sorted(set(found))]
    return walk
