"""Load the bundled `kernels/` folder as the private package `flopkb_kernels`.

The kernels are part of the knowledge base, not of the library: they are loaded by path so that
flopkb never claims the top-level import name `kernels` (another PyPI project owns it), and so
that a KB given with `--kb` can carry kernels of its own. Importing this module never imports torch.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from flopkb.paths import bundled_root

PACKAGE_NAME = "flopkb_kernels"
# Read by kernels/_platform.py: "1" makes every kernel take the paths an Ampere/Ada GPU has.
PORTABLE_ENV = "FLOPKB_PORTABLE"


def kernels_dir(kb_root: Path | None = None) -> Path:
    """The kernels folder of a KB root (the bundled one by default)."""
    return (kb_root or bundled_root()) / "kernels"


def load_kernels(kb_root: Path | None = None) -> ModuleType:
    """Import `kernels/` as package `flopkb_kernels` (once per process) and return it."""
    loaded = sys.modules.get(PACKAGE_NAME)
    folder = kernels_dir(kb_root)
    if loaded is not None and Path(loaded.__file__).parent == folder:
        return loaded
    spec = importlib.util.spec_from_file_location(
        PACKAGE_NAME, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"expected a kernels package at {folder}, found none")
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_NAME] = module
    spec.loader.exec_module(module)
    return module


def load_op(op: str, module: str, kb_root: Path | None = None) -> ModuleType:
    """Import `kernels/<op>/<module>.py`, e.g. `load_op("ssd", "chunked")`."""
    load_kernels(kb_root)
    return importlib.import_module(f"{PACKAGE_NAME}.{op}.{module}")
