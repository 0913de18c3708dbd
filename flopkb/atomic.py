"""Safe, atomic file writes: whatever flopkb writes appears whole or not at all, and only where a
plain file may be written.

Atomic: the text goes to a temp file in the target's folder, is fsynced, and is published with one
rename, so an interrupted write (Ctrl-C, SIGTERM, a full disk, a crash) leaves no partial file and
never a half-overwritten one.

Safe: one rule for every command that writes (README, "Writing files"), checked before anything
is written, refused with a one-line reason (`UnsafeTarget`; the CLI exits 2):

- the target must be a regular file or absent: a device, FIFO, socket or folder is never replaced
  (even as root, `--out /dev/null` leaves the system's null device alone);
- an existing file is replaced only with `--force` (`WritePolicy.force`); without it the file is
  published with `link()`, which fails if the name appeared meanwhile, so no check-then-write race
  can clobber it either;
- a symlink is written through (its target replaced, the link kept) only with
  `--follow-symlinks`; otherwise refused;
- nothing is written inside a protected folder (the KB's `records/`: a stray file there breaks the
  next load), except by verify, whose evidence records belong there.

The CLI sets the policy of one command with `writing(policy)`; every write below it (graph export
and render, schema export, verify's evidence and plots) obeys it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from flopkb.load.safefile import describe


class UnsafeTarget(OSError):
    """A write refused before anything was written; `str()` is the one-line reason."""


@dataclass(frozen=True)
class WritePolicy:
    """How one command may write. The defaults are the CLI's defaults: refuse to replace."""

    force: bool = False
    follow_symlinks: bool = False
    protected: tuple[Path, ...] = ()


_POLICY: ContextVar[WritePolicy | None] = ContextVar("flopkb_write_policy", default=None)


@contextlib.contextmanager
def writing(policy: WritePolicy) -> Iterator[WritePolicy]:
    """Every write inside the block follows `policy`."""
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


def current_policy() -> WritePolicy:
    """The policy set by the innermost `writing` block, else the defaults."""
    return _POLICY.get() or WritePolicy()


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_target(path: Path, policy: WritePolicy | None = None) -> Path:
    """The file to write for `path` under `policy` (a symlink's target when following it).

    Raises UnsafeTarget with the reason when `path` must not be written. Nothing is opened.
    """
    policy = policy or current_policy()
    target = path
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        if not policy.follow_symlinks:
            raise UnsafeTarget(
                f"{path} is a symlink; pass --follow-symlinks to write through it to its target"
            )
        target = Path(os.path.realpath(path))
        try:
            mode = os.lstat(target).st_mode
        except FileNotFoundError:
            mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise UnsafeTarget(f"{target} is {describe(mode)}; flopkb writes only regular files")
    if mode is not None and not policy.force:
        raise UnsafeTarget(f"{target} exists; pass --force to replace it")
    folder = os.path.realpath(target.parent)
    for guarded in policy.protected:
        if _inside(folder, os.path.realpath(guarded)):
            raise UnsafeTarget(
                f"{target} is inside the KB's {guarded}: only records go there "
                "(a stray file breaks the next load); write it elsewhere"
            )
    return target


def check_folder(folder: Path, policy: WritePolicy | None = None) -> Path:
    """`folder`, checked as an output folder (schema export's, verify's evidence folder): absent
    or a real folder, a symlink only with --follow-symlinks, never inside a protected folder."""
    policy = policy or current_policy()
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        if not policy.follow_symlinks:
            raise UnsafeTarget(f"{folder} is a symlink; pass --follow-symlinks to write through it")
        mode = os.stat(folder).st_mode if os.path.exists(folder) else None
    if mode is not None and not stat.S_ISDIR(mode):
        raise UnsafeTarget(f"{folder} is {describe(mode)}; expected a folder to write into")
    real = os.path.realpath(folder)
    for guarded in policy.protected:
        if _inside(real, os.path.realpath(guarded)):
            raise UnsafeTarget(
                f"{folder} is inside the KB's {guarded}: only records go there; write elsewhere"
            )
    return folder


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def publish_mode(tmp: Path) -> None:
    """Give a temp file the mode a plain `open(path, "w")` would have (mkstemp makes it 0600)."""
    with contextlib.suppress(OSError):
        os.chmod(tmp, 0o666 & ~_umask())


def _publish(tmp: Path, target: Path, replace: bool) -> None:
    """Rename `tmp` to `target`: over an existing regular file only when `replace`."""
    if replace:
        # the name may have changed since the check: never rename over a device or a FIFO
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.lstat(target).st_mode):
                raise UnsafeTarget(f"{target} changed while being written; left as it is")
        os.replace(tmp, target)
        return
    try:
        # link() fails when the name exists, however it came to exist since the check
        os.link(tmp, target)
    except FileExistsError:
        raise UnsafeTarget(f"{target} exists; pass --force to replace it") from None
    except OSError as exc:
        # a filesystem without hard links: check, then rename (a narrow race remains)
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if os.path.lexists(target):
            raise UnsafeTarget(f"{target} exists; pass --force to replace it") from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside `path` for a writer that needs a file name (a plot, `dot -o`).

    `path` is checked against the current policy first (`check_target`). When the block ends
    normally the temp file is fsynced, given the usual mode and published as `path` (or the
    target of the symlink at `path`); on any exception (Ctrl-C and SIGTERM included) it is
    removed and `path` is left as it was.
    """
    policy = current_policy()
    target = check_target(path, policy)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        publish_mode(tmp)
        _publish(tmp, target, policy.force)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_folder(target.parent)


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
