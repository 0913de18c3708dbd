"""SIGINT and SIGTERM for the `flopkb` process: one line, exit 128+N, nothing left behind.

While a command runs, SIGINT raises KeyboardInterrupt (as Python does) and SIGTERM raises
`Terminated`, so the same `finally` / `except BaseException` blocks run for both: the temp file
of an atomic write is removed and a child process (graphviz `dot`, which `subprocess.run` kills
on any exception) is ended. Python's default SIGTERM would end the process on the spot, leaving
both behind.

Once the command has returned, its output is complete: a signal from then until the process ends
(atexit handlers, the wait for non-daemon threads that torch and triton leave running) exits at
once with the one line and 128+N, instead of a KeyboardInterrupt traceback under an exit code 0.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Terminated(BaseException):
    """SIGTERM, raised where the process was; a BaseException so that `except Exception`
    clauses (a failing experiment, a plot) do not swallow it."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


class _State:
    pid: int = -1
    received: int | None = None
    finished: bool = False


_state = _State()


def message(signum: int) -> str:
    return f"flopkb: {WORDS.get(signal.Signals(signum), 'signal')}"


def _exit_now(signum: int) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, (message(signum) + "\n").encode())
    os._exit(128 + signum)


def _handler(signum: int, frame: FrameType | None) -> None:
    if os.getpid() != _state.pid:
        # a forked worker (file loading, checks): die as it would have without us
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _state.finished:
        _exit_now(signum)
    if _state.received is None:
        _state.received = signum
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def install() -> None:
    """Handle SIGINT and SIGTERM in this (the main) process; call once, from the main thread."""
    _state.pid, _state.received, _state.finished = os.getpid(), None, False
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers (an embedder calling main() elsewhere)
    for signum in HANDLED:
        signal.signal(signum, _handler)


def finish() -> int | None:
    """The command is done: from now on a signal exits at once. Returns the signal that
    interrupted the command, if one did."""
    _state.finished = True
    return _state.received
