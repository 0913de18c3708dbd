"""The child a CPU check runs in (flopkb.verify.sandbox): bounded in time and memory, and
usable after the parent has run torch on several threads (OpenMP's pool does not survive a
fork: the child's first matmul then waited forever, seen as calibration timing out)."""

from __future__ import annotations

import time

import torch

from flopkb.verify import sandbox


def test_a_child_runs_torch_after_the_parent_used_its_thread_pool() -> None:
    a = torch.randn(512, 512)
    assert float((a @ a).abs().sum()) > 0

    def check():
        b = torch.ones(512, 512)
        return [{"sum": float((b @ b).sum())}], {"threads": torch.get_num_threads()}

    start = time.monotonic()
    reply = sandbox.run_limited(check, 10)
    assert reply["rows"] == [{"sum": 512.0 ** 3}] and reply["extra"] == {"threads": 1}
    assert time.monotonic() - start < 10


def test_a_check_past_its_limit_is_stopped() -> None:
    def check():
        while True:
            pass

    start = time.monotonic()
    reply = sandbox.run_limited(check, 0.5)
    assert reply["timeout"] and "0.75 s" in reply["error"]
    assert time.monotonic() - start < 5


def test_an_allocation_past_the_cap_is_a_memory_failure() -> None:
    def check():
        torch.empty(30000, 30000)
        return [], {}

    reply = sandbox.run_limited(check, 10, memory=256 << 20)
    assert reply.get("memory") and "memory cap: 256 MiB" in reply["error"], reply
