"""Where the knowledge base is: found the way git finds its repository, or the bundled one.

`find_kb(start)` walks from `start` (a given path, or the current folder) upward: the first
folder that holds `records/`, or a config file (`flopkb.toml`, or pyproject.toml with
`[tool.flopkb]`), is the KB root (a config's `root` key may name another folder). The walk stops
at the top of a git repository (a folder holding `.git`). The bundled KB is used only when asked
(`--kb bundled`) or when nothing was found and no folder around `start` holds YAML records: a
validator that silently checks the wrong KB would pass CI on a broken one.

`isolated=True` (`flopkb validate --isolated`, for CI on untrusted pull requests) reads no
config file at all: the KB is the folder holding `records/` (or `--kb`), the rules are the
built-in ones, and nothing found means exit 2, never the bundled KB.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from flopkb.config import Config, config_in

_PACKAGE = Path(__file__).resolve().parent
BUNDLED = "bundled"
_SUFFIXES = (".yaml", ".yml")
# a YAML file whose top level names a record kind is a record (other YAML, CI configs, is not)
_RECORD_KIND = re.compile(
    rb"^kind:[ \t]*[\"']?(operator|model|accelerator|quantity|source|evidence)\b", re.M
)
# bounds of the "does this folder hold records?" probe: it must stay instant in any folder
_PROBE_FILES = 200
_PROBE_BYTES = 64 * 1024


class KbNotFound(ValueError):
    """No usable KB: `--kb` names nothing, or records sit around the user but no KB is found."""


def bundled_root() -> Path:
    """The folder holding the bundled `records/`, `schema/` and `kernels/`.

    A wheel carries them under `flopkb/_kb/` (see pyproject's force-include); a source checkout
    or editable install finds them at the repository root, one level above the package.
    """
    packaged = _PACKAGE / "_kb"
    if (packaged / "records").is_dir():
        return packaged
    return _PACKAGE.parent


@dataclass(frozen=True)
class KbLocation:
    """The KB a run works on, how it was found, and the configuration found with it."""

    root: Path
    bundled: bool
    how: str
    config: Config
    # --isolated: no config file was read (config is the defaults)
    isolated: bool = False

    def as_dict(self) -> dict[str, object]:
        config = str(self.config.file) if self.config.file is not None else None
        return {"root": str(self.root), "bundled": self.bundled, "config": config,
                "isolated": self.isolated}

    def describe(self) -> str:
        """`KB /path/to/kb (found: records/ above the current folder)`, for text summaries."""
        return f"KB {self.root} ({self.how})"

    def config_used(self) -> str:
        """Which settings a run used: `config /kb/flopkb.toml`, `no config`, or `--isolated`."""
        if self.isolated:
            return "--isolated: no config read"
        return f"config {self.config.file}" if self.config.file is not None else "no config"

    def summary(self) -> str:
        """`describe()` and the config used, the file named once (`how` may name it already)."""
        if self.config.file is not None and str(self.config.file) in self.how:
            return self.describe()
        return f"{self.describe()}; {self.config_used()}"


def records_folder(root: Path) -> Path:
    return root / "records" if (root / "records").is_dir() else root


def _has_yaml(folder: Path) -> bool:
    """Any `*.yaml`/`*.yml` file below `folder` (stops at the first one)."""
    for _, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        if any(n.endswith(_SUFFIXES) and not n.startswith(".") for n in names):
            return True
    return False


def _holds_records(folder: Path) -> bool:
    """Does `folder` itself hold YAML files that are flopkb records (bounded probe)?"""
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(_SUFFIXES))[:_PROBE_FILES]
    except OSError:
        return False
    for name in names:
        try:
            with open(folder / name, "rb") as handle:
                if _RECORD_KIND.search(handle.read(_PROBE_BYTES)):
                    return True
        except OSError:
            continue
    return False


def _checked_root(root: Path, what: str) -> Path:
    if not root.is_dir():
        raise KbNotFound(f"{what} {root} does not exist or is not a folder")
    if not _has_yaml(records_folder(root)):
        raise KbNotFound(f"{what} {root} holds no YAML records (no *.yaml under it)")
    return root


def _ancestors(start: Path) -> list[Path]:
    """`start` and the folders above it, up to the top of its git repository (inclusive)."""
    out = []
    for folder in [start, *start.parents]:
        out.append(folder)
        if (folder / ".git").exists():
            break
    return out


def _nearest_config(folders: list[Path]) -> Config | None:
    for folder in folders:
        found = config_in(folder)
        if found is not None:
            return found
    return None


def find_kb(
    kb: str | Path | None = None, start: Path | None = None, isolated: bool = False
) -> KbLocation:
    """The KB to work on (see the module docstring); raises KbNotFound, ConfigError."""
    here = Path(os.path.abspath(start or Path.cwd()))
    if here.is_file() or (not here.exists() and here.suffix in _SUFFIXES):
        here = here.parent
    if isolated:
        return _find_isolated(kb, here)
    folders = _ancestors(here)
    if kb is not None and str(kb) == BUNDLED:
        root = bundled_root()
        return KbLocation(root, True, "bundled KB, --kb bundled", config_in(root) or Config())
    if kb is not None:
        given = Path(kb)
        root = given.parent if given.name == "records" and given.is_dir() else given
        root = _checked_root(root, "--kb")
        config = _nearest_config(_ancestors(Path(os.path.abspath(root)))) or Config()
        return KbLocation(root, False, "--kb", config)
    for folder in folders:
        config = config_in(folder)
        if config is not None:
            if config.root is not None:
                root = _checked_root(config.root, f"the KB root named by {config.file}:")
                return KbLocation(root, False, f"root set in {config.file}", config)
            if (folder / "records").is_dir():
                return KbLocation(folder, False, f"config {config.file}", config)
        if (folder / "records").is_dir():
            config = _nearest_config(folders) or Config()
            return KbLocation(folder, False, "found from the current folder upward", config)
    around = [*folders, *_subfolders(here)]
    if any(_holds_records(folder) for folder in around):
        raise KbNotFound(
            f"no KB found from {here} upward (no records/ folder and no flopkb config), but YAML "
            "records lie here; pass --kb DIR (the folder holding records/), or --kb bundled"
        )
    how = "bundled KB: no KB found from the current folder upward"
    return KbLocation(bundled_root(), True, how, Config())


def _find_isolated(kb: str | Path | None, here: Path) -> KbLocation:
    """`find_kb` without reading any config: `--kb`, else the nearest folder holding records/."""
    if kb is not None and str(kb) == BUNDLED:
        return KbLocation(bundled_root(), True, "bundled KB, --kb bundled", Config(), True)
    if kb is not None:
        given = Path(kb)
        root = given.parent if given.name == "records" and given.is_dir() else given
        return KbLocation(_checked_root(root, "--kb"), False, "--kb", Config(), True)
    for folder in _ancestors(here):
        if (folder / "records").is_dir():
            how = "found from the current folder upward"
            return KbLocation(folder, False, how, Config(), True)
    # a config's `root` is not read here, and falling back to the bundled KB would check the
    # wrong KB and pass
    raise KbNotFound(
        f"no records/ folder found from {here} upward; --isolated reads no config (so no "
        "`root` key): pass --kb DIR, the folder holding records/"
    )


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))[
            :_PROBE_FILES
        ]
    except OSError:
        return []
