"""Read a record file without letting the filesystem play tricks on the reader.

A record is a regular file. A FIFO named `x.yaml` would block `open()` forever, a device can have
side effects when opened (a tape rewinds, a watchdog arms), and a symlink swapped in for a checked
file would be followed out of the KB. So the file is `lstat`ed first and only a regular file is
opened; the open itself uses O_NOFOLLOW (a symlink swapped in since fails with ELOOP) and
O_NONBLOCK (a FIFO swapped in cannot block it), and `fstat` of the open descriptor must show the
very file that was checked (same device and inode), or nothing is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

NOT_REGULAR = "FKB130"
SYMLINK = "FKB131"
UNREADABLE = "FKB101"

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# What open(O_NOFOLLOW) says on a symlink: ELOOP on Linux, EMLINK on FreeBSD.
_SYMLINK_ERRNOS = {errno.ELOOP, errno.EMLINK}


class RefusedFile(OSError):
    """A path that is not a regular file (or changed while being opened): never read.

    `code` is the rule code of the finding it becomes (FKB130 not a regular file, FKB131 a
    symlink, FKB101 a folder).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message


def describe(mode: int) -> str:
    """What a file of `mode` is, in words ("a FIFO", "a character device", ...)."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def refusal(mode: int) -> RefusedFile:
    """The refusal for a path whose `lstat` mode is not a regular file's."""
    if stat.S_ISLNK(mode):
        return RefusedFile(SYMLINK, "a symlink; not followed")
    if stat.S_ISDIR(mode):
        return RefusedFile(UNREADABLE, "cannot read the file: it is a folder")
    return RefusedFile(
        NOT_REGULAR, f"{describe(mode)}, not a regular file; never opened (a record is a file)"
    )


def read_regular(path: Path | str, limit: int) -> bytes:
    """At most `limit` bytes of the regular file at `path`.

    Raises RefusedFile for anything else (never opened, or opened without blocking and closed
    unread), and OSError when the file cannot be read (permissions, I/O).
    """
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise refusal(before.st_mode)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno in _SYMLINK_ERRNOS:
            raise RefusedFile(
                SYMLINK, "a symlink (swapped in since the check); not followed"
            ) from None
        raise
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise RefusedFile(NOT_REGULAR, "the file changed while being opened; not read")
        return _read_upto(fd, limit, now.st_size)
    finally:
        os.close(fd)


def _read_upto(fd: int, limit: int, size: int) -> bytes:
    """At most `limit` bytes from `fd`. Reads sized by the file's size, not by `limit`: a
    buffered `read(limit)` allocates the whole limit (1 MiB) for every small record first."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, max(size + 1, 1 << 16)))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
