"""Atomic file writes: whatever flopkb writes appears whole or not at all.

An interrupted write (Ctrl-C, a full disk, a crash) leaves no partial file and never a
half-overwritten one, because the text goes to a temp file in the same folder, is fsynced, and
replaces the target with one `os.replace`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def publish_mode(tmp: Path) -> None:
    """Give a temp file the mode a plain `open(path, "w")` would have (mkstemp makes it 0600)."""
    with contextlib.suppress(OSError):
        os.chmod(tmp, 0o666 & ~_umask())


def atomic_write_text(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically: temp file in the same folder, fsync, os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        publish_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    # Persist the rename itself (directory entry); not possible on every platform.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return path
