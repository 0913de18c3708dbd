"""Load the bundled `kernels/` folder as the private package `flopkb_kernels`.

The kernels are part of the knowledge base, not of the library: they are loaded by path so that
flopkb never claims the top-level import name `kernels` (another PyPI project owns it), and so
that a KB given with `--kb` can carry kernels of its own. Importing this module never imports torch.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from flopkb.paths import bundled_root

PACKAGE_NAME = "flopkb_kernels"
# Read by kernels/_platform.py: "1" makes every kernel take the paths an Ampere/Ada GPU has.
PORTABLE_ENV = "FLOPKB_PORTABLE"


def kernels_dir(kb_root: Path | None = None) -> Path:
    """The kernels folder of a KB root (the bundled one by default)."""
    return (kb_root or bundled_root()) / "kernels"


def kernels_root(kb_root: Path | None, entry: str | None = None) -> Path | None:
    """The KB root whose kernels/ holds `entry` (a path below kernels/, or an operator name):
    the KB's own when its kernels/ has that operator folder (or top-level file), else the
    bundled one. Without `entry`: the KB's own whenever it has a kernels/ folder at all.

    One rule for every experiment, bundled or declared by the KB: an operator folder of the KB
    stands in for the bundled one of the same name, and a KB without it runs the bundled one.
    """
    if kb_root is None or not kernels_dir(kb_root).is_dir():
        return None
    if entry is None:
        return kb_root
    head = entry.strip("/").split("/", 1)[0]
    folder = kernels_dir(kb_root)
    try:
        if (folder / head).exists() or (folder / f"{head}.py").is_file():
            return kb_root
    except OSError:
        # a name no file system holds (too long, say) is no folder of the KB's
        pass
    return None


# What a declaration's `kernels:` may list: paths below kernels/, each part a plain name (no
# "..", no hidden or absolute part), a few of them, and a bounded walk over what they name.
# The bundled declarations list at most 9 entries and their folders hold under 100 sources.
MAX_KERNEL_ENTRIES = 64
MAX_KERNEL_ENTRY_CHARS = 200
MAX_KERNEL_FILES = 2000
_KERNEL_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def kernel_entry_problem(entry: str) -> str | None:
    """None when `entry` (one `kernels:` item) is a relative path below kernels/ made of plain
    names (a trailing "/" for a folder); else why not. Lexical: nothing is looked at on disk."""
    if len(entry) > MAX_KERNEL_ENTRY_CHARS:
        return f"{len(entry)} characters; at most {MAX_KERNEL_ENTRY_CHARS}"
    if entry.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", entry):
        return "an absolute path; entries are relative to kernels/"
    parts = entry.removesuffix("/").split("/")
    for part in parts:
        if part in ("..", "."):
            return f"{part!r} leaves or repeats the folder; entries stay below kernels/"
        if not _KERNEL_PART.fullmatch(part):
            return (f"part {part!r} is not a plain name (letters, digits, '_', '.', '-'; not "
                    "starting with '.' or '-'; at most 100 characters)")
    return None


def inside(folder: Path, path: Path) -> bool:
    """`path`, links resolved, lies in `folder` (also resolved): what a kernels/ entry names is
    never read when a link leads it out of the KB's (or the bundled) kernels/."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


def walk_sources(base: Path, suffixes: frozenset[str]) -> Iterator[Path]:
    """Files below folder `base` whose suffix is in `suffixes`, at most MAX_KERNEL_FILES + 1
    of them (a caller seeing more reports the bound), never descending through a link to a
    folder nor into __pycache__."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if os.path.splitext(name)[1] in suffixes:
                seen += 1
                yield Path(dirpath) / name
                if seen > MAX_KERNEL_FILES:
                    return


def package_name(folder: Path) -> str:
    """The import name of a kernels folder: `flopkb_kernels` for the bundled one, a name of its
    own for any other KB's (`flopkb_kernels_kb_<digest>`), so that a run using a KB's own
    operator beside a bundled one imports both without one replacing the other."""
    if folder.resolve() == kernels_dir().resolve():
        return PACKAGE_NAME
    digest = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return f"{PACKAGE_NAME}_kb_{digest}"


# Kernels folders this process never imports from (`refuse_kernels`): a CPU check run under
# `verify --no-kb-code` sets the KB's, so code reaching it at run time fails instead of running.
_REFUSED: set[Path] = set()


def refuse_kernels(kb_root: Path) -> None:
    """Never import from `kb_root`'s kernels/ in this process again (ImportError instead)."""
    _REFUSED.add(kernels_dir(kb_root).resolve())


def load_kernels(kb_root: Path | None = None) -> ModuleType:
    """Import `kernels/` as a package (once per process per folder) and return it.

    A KB's kernels folder needs no `__init__.py`: without one it is imported as a bare package
    whose modules are its files and operator folders."""
    folder = kernels_dir(kb_root)
    if folder.resolve() in _REFUSED:
        raise ImportError(f"the KB's kernels/ ({folder}) is not run here (--no-kb-code)")
    name = package_name(folder)
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[str(folder)]
        )
    else:
        spec = importlib.util.spec_from_loader(name, loader=None, is_package=True)
        if spec is not None:
            spec.submodule_search_locations = [str(folder)]
    if spec is None or not folder.is_dir():
        raise ImportError(f"expected a kernels package at {folder}, found none")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)
    return module


def load_op(op: str, module: str, kb_root: Path | None = None) -> ModuleType:
    """Import `kernels/<op>/<module>.py`, e.g. `load_op("ssd", "chunked")`."""
    package = load_kernels(kb_root)
    return importlib.import_module(f"{package.__name__}.{op}.{module}")


def load_module(dotted: str, kb_root: Path | None = None) -> ModuleType:
    """Import `kernels/<a>/<b>.py` for `dotted` "a.b" (any depth) of the kernels below
    `kb_root` (the bundled ones when None)."""
    package = load_kernels(kb_root)
    return importlib.import_module(f"{package.__name__}.{dotted}")
