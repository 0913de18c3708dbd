"""The library entry point: `validate(paths_or_root) -> ValidationResult`.

Given a KB root (a folder with `records/`), a records folder, or a set of files. For files inside
a KB (`.../records/...`), the rest of that KB is loaded too so that references resolve, but only
the given files are reported on: checking one edited file never fails on its neighbours. With
`changed=True` (pre-commit) the report also covers every record that references an id of a given
or deleted file, so deleting a cited record cannot pass, and what a changed experiment
declaration or kernel file feeds (`flopkb.feeds`).

Then the selection (`select`/`ignore`, excluded paths) and inline suppressions are applied.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flopkb import budget, suppression
from flopkb.check import run_checks
from flopkb.check.base import CheckContext
from flopkb.check.signatures import signature_findings
from flopkb.feeds import fed_by, source_path
from flopkb.findings import Finding, Severity, full_records, sorted_findings
from flopkb.kb import KnowledgeBase, display_path, gc_paused, load_files
from flopkb.load import Limits
from flopkb.load.walk import (
    RECORD_SUFFIXES,
    check_file,
    records_dir,
    walk_folder,
    walk_records,
)
from flopkb.paths import bundled_root
from flopkb.referencing import referenced_by, referencing
from flopkb.rules import RULES, finding_of
from flopkb.selection import Selection, excluded


class ValidationInputError(OSError):
    """A path to validate does not exist or is not a record file or folder (exit code 2)."""


@dataclass
class ValidationResult:
    """Findings of one run; `ok` is false with any error (or any warning under `strict`)."""

    findings: list[Finding] = field(default_factory=list)
    records: int = 0
    strict: bool = False
    # which KB was checked: {"root": path, "bundled": bool} (None: files outside any KB)
    kb: dict[str, Any] | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.error]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.warning]

    @property
    def notes(self) -> list[Finding]:
        """Reports that never fail a run (a claim not applicable on a part lacking a feature)."""
        return [f for f in self.findings if f.severity is Severity.info]

    @property
    def ok(self) -> bool:
        return not self.errors and not (self.strict and self.warnings)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def as_dict(self) -> dict[str, Any]:
        """The stable JSON contract (ok, records, errors, warnings; docs/validate.md) plus hint,
        severity, notes and the KB that was checked. A record id the findings show cut is given
        whole once, in `full_records` (cut id -> id)."""

        data: dict[str, Any] = {
            "ok": self.ok,
            "kb": self.kb,
            "records": self.records,
            "errors": [f.as_dict() for f in self.errors],
            "warnings": [f.as_dict() for f in self.warnings],
            "notes": [f.as_dict() for f in self.notes],
        }
        if full := full_records(self.findings):
            data["full_records"] = full
        return data


def _kb_root_of(path: Path) -> Path | None:
    """The KB root above a record file: the parent of its nearest `records/` ancestor."""
    for parent in path.parents:
        if parent.name == "records":
            return parent.parent
    return None


@dataclass
class _Targets:
    """What one run reads: files reported on, files loaded (the report set's whole KBs), and the
    walk's findings: `scoped` in what was given (always reported), `around` in the rest of a KB
    (reported only where it is a file that was given)."""

    report: list[Path] = field(default_factory=list)
    load: list[Path] = field(default_factory=list)
    scoped: list[Finding] = field(default_factory=list)
    around: list[Finding] = field(default_factory=list)


def _inside(path: Path, folder: Path) -> bool:
    return os.path.abspath(path).startswith(os.path.abspath(folder) + os.sep)


def _targets(paths: Sequence[Path], kb_root: Path | None = None) -> _Targets:
    """The files to report on and to load for the given roots, folders and files.

    Every listing is the bounded, symlink-safe walk of `flopkb.load.walk`; a file given by name is
    checked by the same rules (a FIFO or a link out of its KB is a finding, never read). A path
    inside `kb_root`'s records resolves against that KB (its records folder need not be called
    `records/` when a config names the root); others against their `records/` ancestor.
    """
    out = _Targets()
    report, load = out.report, out.load
    walked: dict[Path, list[Path]] = {}

    def root_of(path: Path) -> Path | None:
        if kb_root is not None and _inside(path, records_dir(kb_root)):
            return kb_root
        return _kb_root_of(Path(os.path.abspath(path)))

    def kb_files(root: Path) -> list[Path]:
        # a pre-commit hook passes many files of one KB: walk that KB once, not once per file
        if root not in walked:
            walk = walk_records(root)
            walked[root] = walk.files
            out.around.extend(walk.findings)
        return walked[root]

    for path in paths:
        if not os.path.lexists(path):
            raise ValidationInputError(f"no such file or folder: {path}")
        if path.is_dir():
            # a folder inside a KB's records/ (e.g. records/classes): resolve against the whole KB
            root = root_of(path)
            walk = walk_folder(records_dir(path), root or path)
            report += walk.files
            out.scoped.extend(walk.findings)
            load += kb_files(root) if root is not None else walk.files
        elif path.suffix in RECORD_SUFFIXES:
            root = root_of(path)
            checked, refused = check_file(path, root or path.parent)
            if refused is not None:
                out.scoped.append(refused)
            if checked is not None:
                report.append(checked)
            load += kb_files(root) if root is not None else [] if checked is None else [checked]
        else:
            raise ValidationInputError(
                f"not a YAML record file ({'/'.join(RECORD_SUFFIXES)}): {path}"
            )
    return out


def _other_source(path: Path, kb_root: Path) -> bool:
    """A file below some `kernels/` or `experiments/` folder outside the KB's records/."""
    if _inside(path, records_dir(kb_root)):
        return False
    return bool({"kernels", "experiments"} & set(Path(os.path.abspath(path)).parent.parts))


def _unique(paths: Iterable[Path]) -> list[Path]:
    """First spelling of each file; absolute paths compare (no symlink resolution: syscalls)."""
    seen: dict[str, Path] = {}
    for path in paths:
        seen.setdefault(os.path.abspath(path), path)
    return list(seen.values())


def _ids_of(kb: KnowledgeBase, paths: Iterable[Path]) -> set[str]:
    """Record ids defined in `paths` (an id may differ from its file stem: FKB125)."""
    wanted = {os.path.abspath(p) for p in paths}
    return {rid for rid, path in kb.files.items() if os.path.abspath(path) in wanted}


def _kb_info(root: Path | None) -> dict[str, Any] | None:
    if root is None:
        return None
    bundled = os.path.abspath(root) == os.path.abspath(bundled_root())
    # the library reads no config file: the caller passes `kb_info` when it did
    return {"root": str(root), "bundled": bundled, "config": None, "isolated": False}


def validate(
    paths_or_root: Path | str | Sequence[Path | str],
    *,
    strict: bool = False,
    limits: Limits | None = None,
    kb_root: Path | None = None,
    kb_info: dict[str, Any] | None = None,
    selection: Selection | None = None,
    exclude: Sequence[str] = (),
    changed: bool = False,
    deleted: Sequence[Path] = (),
    deleted_referenced: Collection[str] | None = (),
    deleted_sources: Sequence[str] = (),
    require_signed: bool = False,
) -> ValidationResult:
    """Load, check and collect every finding; raises ValidationInputError only for a bad path.

    `kb_root`: the KB the given paths belong to (discovery's answer); `kb_info` is reported as is.
    `selection`: rule codes to report (`SelectionError` for a code that matches no rule).
    `exclude`: globs of record paths (relative to their KB root) that are not part of the run.
    `changed`: the paths are the changed files of a commit, `deleted` the removed ones: report on
    them, on every record that references one of their ids, and on every record they (or, for
    `deleted_referenced`, the deleted files' committed versions) reference; None there (what the
    deleted files referenced is not known) reports on the whole KB. Changed (or, in
    `deleted_sources`, deleted) files under the KB's experiments/ and kernels/ report on what
    they feed (`flopkb.feeds`): the declarations, the claims linking them, their evidence.
    `require_signed`: unsigned or wrongly signed evidence is an error (FKB515, FKB516).
    """
    limits = limits or Limits()
    selection = selection or Selection()
    # a selection that names no rule is the caller's mistake: say so before any work
    selection.check_codes(RULES)
    given = [paths_or_root] if isinstance(paths_or_root, str | Path) else list(paths_or_root)
    sources = list(deleted_sources)
    if changed and kb_root is not None:
        # changed experiment declarations and kernel files: not records, but what they feed is
        for path in list(given):
            rel = source_path(Path(path), kb_root)
            if rel is not None:
                sources.append(rel)
                given.remove(path)
            elif _other_source(Path(path), kb_root):
                # the hook's pattern also matches a kernels/ or experiments/ folder that is
                # not this KB's (other code in the repository): nothing of the KB to report
                given.remove(path)
    if changed and not given and kb_root is not None:
        # only deletions: load the KB, report on what references them
        walk = walk_records(kb_root)
        targets = _Targets(load=list(walk.files), around=list(walk.findings))
    else:
        targets = _targets([Path(p) for p in given], kb_root)
    report, load = targets.report, targets.load
    root = kb_root or (_kb_root_of(Path(os.path.abspath(report[0]))) if report else None)
    if root is None and len(given) == 1 and Path(given[0]).is_dir():
        root = Path(given[0])
    if exclude:
        report = [p for p in report if not excluded(p, root, exclude)]
        kept = [p for p in load if not excluded(p, root, exclude)]
        if load and not kept:
            # "ok in 0 record files" would pass a KB that was never read
            raise ValidationInputError(
                f"exclude {list(exclude)} matches every record file of the KB "
                f"({len(_unique(load))}): nothing would be checked"
            )
        load = kept
    # the report set's spellings come first and win: findings name files as the user gave them
    report = _unique(report)
    loaded = _unique([*report, *load])
    kb, findings = load_files(sorted(loaded), root=root, limits=limits)
    signed: list[Finding] = []
    if require_signed:
        signed = list(signature_findings(CheckContext(kb)))
    findings = sorted_findings([*targets.scoped, *targets.around, *findings, *run_checks(kb),
                                *signed])
    shown_paths = list(report)
    cwd = os.getcwd()
    if changed:
        given_ids = {p.stem for p in report} | _ids_of(kb, report)
        ids = given_ids | {p.stem for p in deleted}
        # both ways: what references them, and what they reference (evidence backs a claim row)
        near = referencing(kb, ids) | referenced_by(kb, given_ids) | set(deleted_referenced or ())
        shown_paths += [kb.files[rid] for rid in sorted(near) if rid in kb.files]
        declarations, fed = fed_by(kb, kb_root, sources) if sources and kb_root else ([], [])
        shown_paths += fed
        shown_paths = _unique(shown_paths if deleted_referenced is not None else loaded)
    else:
        declarations = []
    if len(loaded) != len(shown_paths):
        shown = {display_path(p, cwd) for p in [*shown_paths, *declarations]}
        shown |= {f.file for f in targets.scoped}
        # an internal error (FKB199) names the KB, not a file: it must never be filtered away
        findings = [f for f in findings if f.file in shown or not f.file or f.rule == "FKB199"]
    findings = selection.apply(findings)
    judged = {code for code in RULES if selection.reports(code)}
    # like loading and the checks: the cyclic GC would rescan every loaded record while the
    # suppressions of 10^4 files (or 40,000 in one) are collected
    with gc_paused():
        findings = suppression.apply(
            findings, [(p, display_path(p, cwd)) for p in [*shown_paths, *declarations]], limits,
            set(RULES), judged,
        )
    findings = selection.apply(sorted_findings(findings))
    return ValidationResult(
        findings=capped(findings),
        records=len(shown_paths),
        strict=strict,
        kb=kb_info if kb_info is not None else _kb_info(root),
    )


_RANK = {Severity.error: 0, Severity.warning: 1, Severity.info: 2}


def capped(findings: list[Finding], limit: int = budget.MAX_FINDINGS_PER_FILE) -> list[Finding]:
    """At most `limit` findings per file, and one FKB116 note saying how many more there were.

    Errors are kept before warnings before notes, so the findings shown decide the exit code as
    the whole set would; the order stays file, line, column.
    """
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        # the loader's own cut note (FKB116) is kept as it is, and not counted
        key = finding.file if finding.rule != "FKB116" else ""
        by_file.setdefault(key, []).append(finding)
    if all(len(group) <= limit for group in by_file.values()):
        return findings
    out: list[Finding] = []
    for file, group in by_file.items():
        if len(group) <= limit or not file:
            out += group
            continue
        ranked = sorted(group, key=lambda f: (_RANK[f.severity], f.sort_key))
        first_cut = ranked[limit]
        out += ranked[:limit]
        out.append(
            finding_of(
                "FKB116", file, first_cut.line or 1, first_cut.column or 1, first_cut.record,
                f"{len(group) - limit} more findings in this file not shown "
                f"(at most {limit} per file)",
                "fix the ones shown and run again",
            )
        )  # fmt: skip
    return sorted_findings(out)
