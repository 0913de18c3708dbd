"""Which findings a run reports: rule selection (`select`/`ignore`) and excluded record paths.

Codes match by prefix, as in ruff: `FKB2` selects every provenance rule, `FKB201` one rule.
`select` empty means every rule. The longest matching prefix decides, so `ignore = ["FKB2"]`
with `select = ["FKB201"]` reports FKB201 alone (and on a tie `ignore` wins). FKB199 (an
internal error) is never filtered: it says flopkb itself failed, so a clean report would lie.

A selection that came (in part) from a config file (`from_config`) never hides what an inline
comment cannot hide either: loading and structure findings (FKB1xx) and FKB303. A pull request
edits the config as easily as a record, so it must not make a broken record vanish; an `ignore`
entry that matches only those codes is refused (`SelectionError`). Flags on the command line are
the caller's own choice and may.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from flopkb.findings import Finding
from flopkb.suppression import suppressible

ALWAYS_REPORTED = frozenset({"FKB199"})


class SelectionError(ValueError):
    """A `select`/`ignore` entry that matches no rule code (a typo must not turn a check off)."""


@dataclass(frozen=True)
class Selection:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # select or ignore was read from a config file: FKB1xx and FKB303 are reported regardless
    from_config: bool = False

    def check_codes(self, known: Iterable[str]) -> None:
        codes = list(known)
        for prefix in (*self.select, *self.ignore):
            if not any(code.startswith(prefix) for code in codes):
                raise SelectionError(
                    f"rule {prefix!r} matches no rule code (codes look like FKB201; "
                    "a prefix such as FKB2 selects a group)"
                )
        if not self.from_config:
            return
        for prefix in self.ignore:
            if not any(suppressible(code) for code in codes if code.startswith(prefix)):
                raise SelectionError(
                    f"ignore {prefix!r} matches only loading and structure findings (FKB1xx) "
                    "or FKB303, which a config never hides (a broken record would vanish)"
                )

    def reports(self, code: str) -> bool:
        if code in ALWAYS_REPORTED or (self.from_config and not suppressible(code)):
            return True
        selected = [len(p) for p in (self.select or ("",)) if code.startswith(p)]
        ignored = [len(p) for p in self.ignore if code.startswith(p)]
        if not selected:
            return False
        return not ignored or max(selected) > max(ignored)

    def apply(self, findings: Iterable[Finding]) -> list[Finding]:
        return [f for f in findings if self.reports(f.rule)]


def excluded(path: Path, root: Path | None, patterns: Sequence[str]) -> bool:
    """Does a glob of `patterns` match `path` (relative to `root`, `/`-separated) or a folder
    above it? fnmatch semantics: `*` also crosses `/`; `records/drafts` excludes the folder."""
    if not patterns:
        return False
    absolute = os.path.abspath(path)
    if root is not None:
        base = os.path.abspath(root)
        rel = os.path.relpath(absolute, base) if absolute.startswith(base + os.sep) else absolute
    else:
        rel = str(path)
    posix = PurePosixPath(Path(rel).as_posix())
    candidates = [str(posix), *(str(p) for p in posix.parents if str(p) != ".")]
    return any(fnmatch.fnmatchcase(c, pat.rstrip("/")) for c in candidates for pat in patterns)
