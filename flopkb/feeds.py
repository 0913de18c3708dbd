"""What a changed experiment declaration or kernel file feeds, for a pre-commit run
(`validate --changed`): the files whose findings it can change.

A declaration (`experiments/<id>.yaml`) feeds its own findings (FKB12x, FKB520-FKB526), the
claim rows linking it (FKB507, FKB527, FKB528) and the evidence it judged (FKB504 under a new
`judge_revision`, FKB510). A kernel file (`kernels/...`) feeds the declarations whose `module:
function` callables and hooks resolve there (FKB523: every declaration of the KB, with the claims
and evidence it feeds, is reported again; they are few), and, through each experiment (bundled
ones too) whose `kernels` entries cover the file, the same claims and evidence (FKB504: stale
hashes). Nothing here imports or runs the KB's code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from flopkb.kb import KnowledgeBase

EXPERIMENTS = "experiments"
KERNELS = "kernels"
_DECLARATION_SUFFIXES = (".yaml", ".yml")


def source_path(path: Path, kb_root: Path) -> str | None:
    """`experiments/x.yaml` or `kernels/op/k.py` (relative to the KB root, `/`-separated) when
    `path` lies below the KB's experiments/ or kernels/ folder; None otherwise."""
    absolute = os.path.abspath(path)
    for folder in (EXPERIMENTS, KERNELS):
        base = os.path.abspath(kb_root / folder)
        if absolute.startswith(base + os.sep):
            return f"{folder}/{Path(os.path.relpath(absolute, base)).as_posix()}"
    return None


def declaration_files(kb_root: Path) -> list[Path]:
    """The KB's own declaration files, broken ones too (the catalogue leaves those out)."""
    folder = kb_root / EXPERIMENTS
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(_DECLARATION_SUFFIXES) and n[:1] != "."]


def _covers(entry: str, kernel: str) -> bool:
    return kernel == entry or (entry.endswith("/") and kernel.startswith(entry))


def fed_by(
    kb: KnowledgeBase, kb_root: Path, changed: Iterable[str]
) -> tuple[list[Path], list[Path]]:
    """(declaration files, record files) whose findings `changed` (see `source_path`; deleted
    files too) can change."""
    catalogue = kb.catalogue()
    names: set[str] = set()
    shown: list[Path] = []
    declarations = declaration_files(kb_root)
    for rel in changed:
        folder, _, rest = rel.partition("/")
        if folder == EXPERIMENTS:
            names.add(Path(rest).stem)
        elif folder == KERNELS:
            names.update(name for name, info in catalogue.experiments.items()
                         if any(_covers(entry, rest) for entry in info.kernels))  # fmt: skip
            # a callable that no longer resolves breaks a declaration (left out of the
            # catalogue): every KB declaration, and what links to it, is reported again
            names.update(p.stem for p in declarations)
            shown += declarations
    shown += [p for p in declarations if p.stem in names]
    records: list[Path] = []
    for rid, record in kb.classes.items():
        rows = record.flop.hardware_parameters
        if any(row.verify is not None and row.verify.experiment in names for row in rows):
            records.append(kb.files[rid])
    records += [kb.files[eid] for eid, ev in kb.evidence.items() if ev.experiment in names]
    return shown, records
