"""Bringing bundled records into a KB of one's own: `flopkb add ID...`.

A bundled record rarely stands alone: `h200-sxm` cites `nvidia-h200-datasheet` and, for its L2
size, the calibration evidence that read it from the device; a class lists accelerators and
cites sources; a `measured` row stands on its evidence, which lists its pictures. `add` copies
the records named and everything they reference, transitively (every string of a record that is
a bundled record id, spec keys and formula names included, and the evidence of a class's
`measured` rows with the pictures it lists), into the same folders of the KB, byte for byte.

What the KB already has is its own: a dependency whose id the KB holds is kept (and not
followed), and a record named on the command line that the KB holds, or any file that would
be replaced, refuses the whole run before anything is written. Writes are atomic, never through
a symlinked folder (`flopkb.scaffold.folders_inside`), never replacing a file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flopkb.atomic import UnsafeTarget, WritePolicy, atomic_path, writing
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.load.walk import walk_records
from flopkb.model import AcceleratorRecord, ClassRecord, QuantityRecord, SourceRecord
from flopkb.model.evidence import EvidenceRecord
from flopkb.paths import bundled_root
from flopkb.scaffold import InitError, folders_inside

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# the folder a bundled record of the expected type lives in (a spec may cite evidence)
_FOLDERS: dict[type, tuple[str, ...]] = {
    AcceleratorRecord: ("accelerators",),
    QuantityRecord: ("quantities",),
    SourceRecord: ("sources", "evidence"),
    ClassRecord: ("classes",),
    EvidenceRecord: ("evidence",),
}


class AddError(Exception):
    """An id the bundled KB does not have, or a file that would be replaced: one line."""


@lru_cache(maxsize=1)
def bundled_files() -> dict[str, Path]:
    """Record id (file stem) -> file, for every record file of the bundled KB."""
    root = bundled_root()
    return {path.stem: path for path in walk_records(root).files}


def bundled_hint(target: str, expected: type) -> str | None:
    """`flopkb add ...` for an id the KB lacks and the bundled KB holds in the expected kind's
    folder; None otherwise."""
    path = bundled_files().get(target)
    if path is None or path.parent.name not in _FOLDERS.get(expected, ()):
        return None
    return f"{target!r} exists in the bundled KB: `flopkb add {target}` brings it in"


@dataclass
class AddResult:
    root: Path
    added: list[Path] = field(default_factory=list)
    # ids the records need that the KB has already: its own version stays
    kept: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "added": [str(p.relative_to(self.root)) for p in self.added],
            "kept": self.kept,
        }


def _strings(value: Any) -> Iterator[str]:
    """Every string of a record's data, dictionary keys too (spec keys are quantity ids)."""
    stack = [value.model_dump(mode="python") if isinstance(value, BaseModel) else value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str):
                    yield key
                stack.append(sub)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _needs(bundled: KnowledgeBase, rid: str) -> set[str]:
    """The bundled ids record `rid` references (see the module docstring)."""
    record = bundled.records[rid]
    out = {text for text in _strings(record) if text in bundled.records}
    formulas = [record.formula] if isinstance(record, QuantityRecord) else []
    if isinstance(record, ClassRecord):
        formulas += [row.formula for row in record.flop.hardware_parameters]
        measured = {f"{rid}/{row.id}" for row in record.flop.hardware_parameters
                    if row.basis.value == "measured"}  # fmt: skip
        out.update(ev.id for ev in bundled.evidence.values() if ev.claim in measured)
    for formula in formulas:
        out.update(n for n in _NAME.findall(formula or "") if n in bundled.records)
    out.discard(rid)
    return out


def _closure(bundled: KnowledgeBase, ids: Iterable[str], have: set[str]) -> tuple[list[str],
                                                                                    list[str]]:
    """(ids to copy, in the order found; ids the KB has already and keeps)."""
    order: list[str] = []
    kept: list[str] = []
    queue = list(ids)
    seen: set[str] = set()
    while queue:
        rid = queue.pop(0)
        if rid in seen:
            continue
        seen.add(rid)
        if rid in have:
            kept.append(rid)
            continue
        order.append(rid)
        queue.extend(sorted(_needs(bundled, rid) - seen))
    return order, kept


def _files_of(bundled: KnowledgeBase, rid: str) -> list[Path]:
    """The bundled file of `rid`, and the pictures an evidence record lists beside it."""
    path = bundled_files()[rid]
    out = [path]
    record = bundled.records[rid]
    if isinstance(record, EvidenceRecord):
        for name in record.artifacts:
            picture = path.parent / name
            if "/" not in name and picture.is_file():
                out.append(picture)
    return out


def add_records(root: Path, ids: list[str]) -> AddResult:
    """Copy the bundled records `ids` and what they need into the KB at `root` (see the module
    docstring); AddError before anything is written when that cannot be done cleanly."""
    bundled, _ = load_kb(bundled_root())
    unknown = [i for i in ids if i not in bundled.records]
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(bundled.records), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise AddError(f"no record {unknown[0]!r} in the bundled KB{hint}")
    have = {p.stem for p in walk_records(root).files}
    present = [i for i in ids if i in have]
    if present:
        raise AddError(
            f"the KB already has a record {present[0]!r}: flopkb add never replaces one (edit "
            "it, or remove it first)"
        )
    order, kept = _closure(bundled, ids, have)
    base = bundled_root() / "records"
    plan = [(src, root / "records" / src.relative_to(base))
            for rid in order for src in _files_of(bundled, rid)]  # fmt: skip
    try:
        folders_inside(root, [dst.relative_to(root) for _, dst in plan])
    except InitError as exc:
        raise AddError(str(exc)) from None
    for _, dst in plan:
        if dst.exists() or dst.is_symlink():
            raise AddError(f"{dst} exists: flopkb add never replaces a file")
    result = AddResult(root=root, kept=kept)
    with writing(WritePolicy(force=False, follow_symlinks=False)):
        for src, dst in plan:
            try:
                with atomic_path(dst) as tmp:
                    tmp.write_bytes(src.read_bytes())
            except UnsafeTarget as exc:
                raise AddError(f"refused: {exc} ({len(result.added)} files were added)") from None
            except OSError as exc:
                raise AddError(f"cannot write {dst}: {exc.strerror or exc}") from None
            result.added.append(dst)
    return result
