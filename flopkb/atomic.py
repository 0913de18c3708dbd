"""Atomic file writes: whatever flopkb writes appears whole or not at all.

An interrupted write (Ctrl-C, a full disk, a crash) leaves no partial file and never a
half-overwritten one, because the text goes to a temp file in the same folder, is fsynced, and
replaces the target with one `os.replace`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def publish_mode(tmp: Path) -> None:
    """Give a temp file the mode a plain `open(path, "w")` would have (mkstemp makes it 0600)."""
    with contextlib.suppress(OSError):
        os.chmod(tmp, 0o666 & ~_umask())


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside `path` for a writer that needs a file name (a plot, `dot -o`).

    When the block ends normally the temp file is fsynced, given the usual mode and renamed over
    `path`; on any exception (Ctrl-C included) it is removed and `path` is left as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        publish_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_folder(path.parent)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically (see `atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="\n")
    return path


def _fsync_folder(folder: Path) -> None:
    # Persist the rename itself (directory entry); not possible on every platform.
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
