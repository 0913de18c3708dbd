"""Where the bundled knowledge base lives: in the wheel, or at the repository root of a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled_root() -> Path:
    """The folder holding the bundled `records/`, `schema/` and `kernels/`.

    A wheel carries them under `flopkb/_kb/` (see pyproject's force-include); a source checkout
    or editable install finds them at the repository root, one level above the package.
    """
    packaged = _PACKAGE / "_kb"
    if (packaged / "records").is_dir():
        return packaged
    return _PACKAGE.parent


def resolve_kb_root(kb: Path | None = None, cwd: Path | None = None) -> Path:
    """The KB root to work on: `--kb DIR`, else `./records` when present, else the bundled KB.

    A root is a folder holding `records/` (and optionally `kernels/`, `schema/`); `--kb` may also
    name the `records/` folder itself.
    """
    if kb is not None:
        return kb.parent if kb.name == "records" and kb.is_dir() else kb
    here = cwd or Path.cwd()
    if (here / "records").is_dir():
        return here
    return bundled_root()
