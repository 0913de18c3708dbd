"""One experiment's CPU check in a child process with a time limit and a memory cap.

Plan mode (`flopkb verify` without `--gpu`) runs code a KB carries: a `while True` kernel must
end as a failure of its own check, not hang the plan, and a CPU point of 30000 x 30000 must be a
memory failure, not 9 GB of the host. The child is forked (the parent has imported what the
check needs: no second start of torch), puts itself in a process group of its own, caps its
address space (`RLIMIT_AS`: what it maps now plus `MEMORY_CAP_BYTES`), runs the check and sends
its rows back as JSON (never a pickle: what the KB's code hands back is data to the parent).
Past `TIME_FACTOR` x the declaration's `time_limit_s` the whole group is killed.

Where `fork` is missing (Windows) the check runs in this process, unbounded, and says so.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

# The address space a CPU check may add to what the forked child already maps. The bundled
# checks run small odd sizes (`cpu_point`) through the Triton interpreter, well under this.
MEMORY_CAP_BYTES = 4 << 30
# The CPU check gets the time the GPU run gets before it errors (docs/verify.md: 1.5 x).
TIME_FACTOR = 1.5
# What a child may send back (its check rows, as JSON).
MAX_REPLY_BYTES = 1 << 20

Check = Callable[[], tuple[list[dict[str, Any]], dict[str, Any]]]


def _mapped_bytes() -> int | None:
    """This process's virtual memory size (VmSize), None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def _cap_memory(extra: int) -> bool:
    try:
        import resource
    except ImportError:
        return False
    mapped = _mapped_bytes()
    if mapped is None:
        return False
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + extra
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return True


def _child(conn, check: Check, memory: int) -> None:
    os.setpgrp()
    # what the KB's code prints never reaches the parent's terminal
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child's lifetime
    # OpenMP's thread pool does not survive a fork: a torch op of the child would wait on the
    # parent's pool forever once the parent has run one. One thread never enters it.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    capped = _cap_memory(memory)
    try:
        rows, extra = check()
        reply = {"rows": rows, "extra": extra, "capped": capped}
    except MemoryError as exc:
        reply = {"error": f"MemoryError: {str(exc)[:200] or 'out of memory'}",
                 "capped": capped}
    except BaseException as exc:
        # any end of the KB's code (SystemExit, KeyboardInterrupt too) is its check's row
        reply = {"error": f"{type(exc).__name__}: {str(exc)[:500]}", "capped": capped}
    try:
        data = json.dumps(reply, default=str).encode()
    except (TypeError, ValueError, MemoryError) as exc:
        data = json.dumps({"error": f"unreadable CPU check result: {exc}"[:300]}).encode()
    conn.send_bytes(data[:MAX_REPLY_BYTES])
    conn.close()
    os._exit(0)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def run_limited(check: Check, time_limit_s: float, memory: int | None = None
                ) -> dict[str, Any]:
    """Run `check` (returns (check rows, extra JSON data)) in a forked child: {"rows", "extra"}
    when it ends in time, {"error"} when it raised, ran past TIME_FACTOR x `time_limit_s`
    ("timeout": True), ran out of memory ("memory": True) or died. "limited": False where the
    platform has no fork (then it ran here, unbounded). `memory`: MEMORY_CAP_BYTES by default.
    A row of the check whose error is an allocation failure gets the cap added to it."""
    memory = MEMORY_CAP_BYTES if memory is None else memory
    if "fork" not in multiprocessing.get_all_start_methods():
        rows, extra = check()
        return {"rows": rows, "extra": extra, "limited": False}
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(send, check, memory), daemon=True)
    process.start()
    send.close()
    limit = TIME_FACTOR * time_limit_s
    reply: Any = None
    # poll is also true when the child died: reading then fails, and the exit status says why
    answered = receive.poll(limit)
    if answered:
        try:
            reply = json.loads(receive.recv_bytes(MAX_REPLY_BYTES))
        except (EOFError, OSError, ValueError):
            reply = None
    process.join(2.0 if answered else 0.0)
    if process.is_alive():
        _kill_group(process.pid)
        process.kill()
    process.join(5.0)
    receive.close()
    timed_out = not answered
    if timed_out:
        return {"error": f"TimeoutError: the CPU check ran past {limit:g} s ({TIME_FACTOR:g} x "
                         f"time_limit_s {time_limit_s:g}) and was stopped", "timeout": True}
    if reply is None:
        code = process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return {"error": f"the CPU check's process ended with {how} before reporting "
                         f"(memory cap {memory >> 20} MiB)", "memory": True}
    if not isinstance(reply, dict) or not isinstance(reply.get("rows", []), list):
        return {"error": "unreadable CPU check result"}
    note = f" (memory cap: {memory >> 20} MiB above what the check started with)"
    error = reply.get("error")
    if isinstance(error, str) and looks_like_memory(error):
        reply.update(memory=True, error=error + note)
    for row in reply.get("rows", []):
        if isinstance(row, dict) and isinstance(row.get("error"), str) \
                and looks_like_memory(row["error"]):
            row["error"] += note
    return reply


def looks_like_memory(error: str) -> bool:
    """An allocation failure, as Python or torch's CPU allocator words it."""
    lowered = error.lower()
    return error.startswith("MemoryError") or "can't allocate memory" in lowered \
        or "out of memory" in lowered or "cannot allocate memory" in lowered
