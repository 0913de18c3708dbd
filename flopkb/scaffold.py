"""`flopkb init [DIR]`: a new KB that validates clean from its first commit.

It reuses the bundled quantities by copying them: the 16 quantity records (`hbm_bandwidth`,
`ridge_point_bf16`, ...), so that `quantity: hbm_bandwidth` resolves at once. Copies rather than a
hidden reference to the bundled KB, because a quantity's formula is part of what the KB's derived
claims and computed parameters mean: upgrading flopkb must not silently change the figures of a
KB under review, every command, editor and pull request sees one KB, and a quantity can be
refined in place. Beside them: one sourced accelerator (the bundled `h100-sxm` with the two
sources its specs cite), one example class with one claim row, `flopkb.toml`, and the JSON
Schema the records' first line points editors to.

Nothing the user has is ever replaced: a file that exists is kept as it is (and reported), and a
name that appears while init writes is not clobbered either (`flopkb.atomic`). Nothing is written
outside DIR: a folder init writes into (`records/`, `records/classes/`, `schema/`, ...) that is a
symlink, or is not a folder, refuses the whole run before anything is written (a cloned
repository's `records -> ~/.ssh` must not receive sixteen quantity files). DIR itself is the
folder the user named and is taken as it is. The schema files are the generated ones
(`flopkb.schema_export.generate`), all of them, so `flopkb schema export --check` holds at once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from flopkb.atomic import UnsafeTarget, WritePolicy, atomic_write_text, writing
from flopkb.paths import bundled_root
from flopkb.schema_export import generate

KIND_FOLDERS = ("classes", "accelerators", "quantities", "sources", "evidence")
EXAMPLE_ACCELERATOR = "h100-sxm"
EXAMPLE_SOURCES = ("nvidia-h100-datasheet", "nvidia-hopper-whitepaper")
EXAMPLE_CLASS = "example-elementwise"

CONFIG = """\
# flopkb configuration (README, "Configuration"); each command-line flag overrides its key.
strict = true                     # warnings fail too
# select = ["FKB1", "FKB2"]       # rule codes or prefixes (default: all)
# ignore = ["FKB602"]
# exclude = ["records/drafts/*"]  # globs relative to this folder
"""

EXAMPLE = """\
# yaml-language-server: $schema=../../schema/record.schema.json
schema_version: 2
id: {id}
kind: operator
title: Example elementwise operator (replace with your own class)
prose: |
  An elementwise kernel reads each input byte once and writes each output byte once, and does
  one or two arithmetic operations per element, far below any ridge point: its time follows the
  HBM bandwidth of the part, not its tensor-core rate.
key_points:
  - "\u25b8 elementwise work is memory-bound: time follows HBM bandwidth"
affected_by_hardware: [{accelerator}]
flop:
  hardware_parameters:
    - id: time-follows-hbm-bandwidth
      quantity: hbm_bandwidth
      effect: "its time follows the HBM bandwidth of the part"
      magnitude: qualitative
      # nothing concrete behind it yet: cite a source (basis: cited) or measure it
      basis: unverified
      # every claim shows a verdict, a computed value or a reason (FKB530): link an experiment
      # that judges yours (docs/verify-your-own-claim.md) in place of this placeholder's reason
      verify: {{not_applicable: "the example row of flopkb init: replace it with your claim"}}
history:
  - {{date: {date}, by: flopkb init, note: "example class written by flopkb init"}}
"""


class InitError(Exception):
    """The target cannot hold a KB (it is a file, or a folder cannot be made): one line."""


@dataclass
class InitResult:
    root: Path
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "root": str(self.root),
            "written": [str(p.relative_to(self.root)) for p in self.written],
            "kept": [str(p.relative_to(self.root)) for p in self.kept],
        }


def _planned(today: dt.date) -> dict[Path, str]:
    """Every file of a new KB (relative path -> text), from the bundled KB and the templates."""
    bundled = bundled_root()
    records = bundled / "records"
    files: dict[Path, str] = {Path("flopkb.toml"): CONFIG}
    for quantity in sorted((records / "quantities").glob("*.yaml")):
        files[Path("records/quantities") / quantity.name] = quantity.read_text(encoding="utf-8")
    files[Path(f"records/accelerators/{EXAMPLE_ACCELERATOR}.yaml")] = (
        records / "accelerators" / f"{EXAMPLE_ACCELERATOR}.yaml"
    ).read_text(encoding="utf-8")
    for source in EXAMPLE_SOURCES:
        files[Path(f"records/sources/{source}.yaml")] = (
            records / "sources" / f"{source}.yaml"
        ).read_text(encoding="utf-8")
    files[Path(f"records/classes/{EXAMPLE_CLASS}.yaml")] = EXAMPLE.format(
        id=EXAMPLE_CLASS, accelerator=EXAMPLE_ACCELERATOR, date=today.isoformat()
    )
    # the records' first line points editors at ../../schema/record.schema.json; the per-kind
    # schemas beside it, so that `schema export --check` finds the folder up to date
    for name, text in generate().items():
        files[Path("schema") / name] = text
    # git keeps no empty folder: evidence/ holds a hidden marker (the walk skips hidden names)
    files[Path("records/evidence/.gitkeep")] = ""
    return files


def folders_inside(root: Path, relatives: list[Path]) -> None:
    """InitError unless every folder between `root` and each file is a real folder (or absent):
    a symlink would take the write out of `root`."""
    seen: set[Path] = set()
    for relative in relatives:
        current = root
        for part in relative.parts[:-1]:
            current = current / part
            if current in seen:
                continue
            seen.add(current)
            if current.is_symlink():
                raise InitError(
                    f"{current} is a symlink: flopkb never writes through one (it would write "
                    "outside the KB folder); replace it with a folder"
                )
            if current.exists() and not current.is_dir():
                raise InitError(f"{current} exists and is not a folder")


def init_kb(target: Path, today: dt.date | None = None) -> InitResult:
    """Scaffold a KB in `target` (made if missing); existing files are kept, never replaced.
    InitError (nothing written) where a folder below `target` is a symlink or a file."""
    root = Path(target)
    if root.exists() and not root.is_dir():
        raise InitError(f"{root} exists and is not a folder")
    result = InitResult(root=root)
    files = _planned(today or dt.date.today())
    folders = [Path(f) / "-" for f in ("schema", *(f"records/{kind}" for kind in KIND_FOLDERS))]
    folders_inside(root, [*folders, *files])
    try:
        for folder in folders:
            (root / folder.parent).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InitError(f"cannot make {exc.filename or root}: {exc.strerror or exc}") from None
    # a record id the KB already has, in any folder (ids are file stems), is not added twice
    existing = {p.stem for p in (root / "records").rglob("*.y*ml")}
    with writing(WritePolicy(force=False, follow_symlinks=False)):
        for relative, text in files.items():
            path = root / relative
            is_record = relative.parts[0] == "records" and relative.suffix == ".yaml"
            if path.exists() or path.is_symlink() or (is_record and relative.stem in existing):
                result.kept.append(path)
                continue
            # again just before the write: a folder swapped for a link meanwhile is refused
            folders_inside(root, [relative])
            try:
                atomic_write_text(path, text)
            except UnsafeTarget:
                # the name appeared meanwhile: it is the user's now, and stays
                result.kept.append(path)
                continue
            except OSError as exc:
                raise InitError(f"cannot write {path}: {exc.strerror or exc}") from None
            result.written.append(path)
    return result
