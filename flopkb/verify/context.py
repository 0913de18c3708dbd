"""What an experiment runs inside: device, kernel loading, correctness checks, timing against the
roofline floor, the per-experiment time limit, and what gets recorded for the evidence.

Imports torch lazily (inside methods) so that importing the runner's plan code stays torch-free.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from flopkb.kernelpkg import kernels_root, load_op
from flopkb.verify import timing as _timing
from flopkb.verify.errors import ExperimentError
from flopkb.verify.errors import PeerUnavailable as PeerUnavailable
from flopkb.verify.timing import Timing

# Relative L2 error allowed against the fp32/fp64 reference, by output dtype: bf16 keeps 8
# significant bits (2^-8 = 4e-3 per element; long recurrences add up), fp16 11, fp32 tf32 dots.
TOLERANCES = {"bfloat16": 2e-2, "float16": 5e-3, "float32": 2e-3, "float64": 1e-6}
# A timing below FLOOR_MARGIN x the roofline floor is physically impossible (the ceilings are
# themselves medians measured in this run, so a few percent of headroom is allowed): error.
FLOOR_MARGIN = 0.85
# An experiment stops sweeping at its time limit and errors at HARD_LIMIT times it.
HARD_LIMIT = 1.5
# The peer adapters `Context.peer` hands out (modules of flopkb/verify/peers/).
PEERS = ("fla", "mamba_cuda", "mamba_ssm")


T = TypeVar("T")


class TimeLimitError(ExperimentError):
    pass


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings of the machine: dense bf16 tensor rate and copy bandwidth."""

    bf16_tflops: float
    copy_gbps: float
    origin: str

    def floor_ms(self, flops: float, nbytes: float, rate_scale: float = 1.0) -> float:
        """max(FLOPs / rate, bytes / bandwidth) in ms; `rate_scale` 2 for int8 (2x bf16 rate)."""
        compute = flops / (self.bf16_tflops * 1e12 * rate_scale)
        memory = nbytes / (self.copy_gbps * 1e9)
        return max(compute, memory) * 1e3

    def as_dict(self) -> dict[str, Any]:
        return {"bf16_tflops": self.bf16_tflops, "copy_gbps": self.copy_gbps, "origin": self.origin}


@dataclass
class Settings:
    """Repetitions per timing; --quick trades statistical power for speed."""

    warmup: int
    reps: int
    budget_ms: float

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        return cls(2, 30, 150.0) if quick else cls(3, 100, 400.0)


# Seeds of one round stay below this (input sets per point are a few dozen at most), so rounds
# never redraw the same inputs.
ROUND_SEED_STRIDE = 100_003


@dataclass
class Context:
    """One experiment's view of the run. `gpu=False` is the CPU plan mode (interpreter)."""

    gpu: bool
    quick: bool = False
    kb_root: Path | None = None
    ceilings: Ceilings | None = None
    l2_bytes: int = 50 * 2**20
    time_limit_s: float = 60.0
    settings: Settings = field(default_factory=lambda: Settings.for_mode(False))
    timings: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    device_name: str | None = None
    # side -> implementation name for the combination being measured (impls.py); a side an
    # experiment asks for that is not set runs its bundled kernel
    impls: dict[str, str] = field(default_factory=dict)
    # side -> every implementation the declaration lists for it (default first): the serving
    # hook times all of them per layer and composes the fastest correct one
    sides: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # side -> exact description of what ran (library, version, entry point), for the evidence
    described: dict[str, str] = field(default_factory=dict)
    # accelerator specs of the KB (accelerator id -> {quantity: value}) for experiments that
    # simulate other parts (D2), and the KB itself for reading them
    kb: Any = None
    # the accelerator record the run's GPU matched (`flopkb.verify.machine.match_accelerator`)
    accelerator: str | None = None
    # the independent round being measured (flopkb.evidence.rounds): input makers draw their
    # random inputs from `seed(base)`, so each round times fresh data
    round: int = 0
    _deadline: float = math.inf

    def seed(self, base: int) -> int:
        """The generator seed of input set `base` in this round (round 0 keeps `base`)."""
        return base + ROUND_SEED_STRIDE * self.round

    @property
    def device(self):
        """cuda with --gpu, else cpu; `device_name` overrides (tests drive the GPU path on cpu)."""
        import torch

        return torch.device(self.device_name or ("cuda" if self.gpu else "cpu"))

    def begin(self, time_limit_s: float) -> None:
        """Start one experiment: fresh logs; the sweep stops at the time limit and the
        experiment errors at HARD_LIMIT times it."""
        self.time_limit_s = time_limit_s
        self._deadline = time.monotonic() + time_limit_s
        self.timings, self.checks, self.notes = {}, [], []
        self.described = {}

    def impl(self, side: str) -> str:
        """The implementation chosen for `side` in this combination ('bundled' by default)."""
        return self.impls.get(side, "bundled")

    def describe_impl(self, side: str, text: str) -> None:
        """Record exactly what ran on `side` (library, version, entry point) for the evidence."""
        self.described[side] = text

    def more(self, done: int) -> bool:
        """Whether the sweep may take another point: always for the first, else while the time
        limit has not passed (a cut sweep is noted; its points so far still count)."""
        if done == 0:
            self.tick()
            return True
        if time.monotonic() > self._deadline:
            self.notes.append(f"sweep cut after {done} points at the {self.time_limit_s:.0f} s "
                              "time limit")
            return False
        return True

    @contextlib.contextmanager
    def optional(self, done: int) -> Iterator[None]:
        """Run one sweep point; past the first (the claim's own), a failure that is not a verdict
        (out of memory, a kernel that cannot compile at that size) is noted and the sweep goes on.
        Wrong results and impossible timings (ExperimentError) always end the experiment."""
        if done == 0:
            yield
            return
        try:
            yield
        except ExperimentError:
            raise
        except Exception as exc:
            self.notes.append(f"sweep point {done + 1} skipped: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}")
            with contextlib.suppress(Exception):
                import torch

                torch.cuda.empty_cache()

    def sweep(self, points: Iterable[T], rows: Sized
              ) -> Iterator[tuple[T, contextlib.AbstractContextManager[None]]]:
        """A sweep's points in turn while the time limit allows (`more`), each with the guard its
        body runs under (`optional`); `rows` holds one row per point that ran, so a skipped point
        does not count. The loop every hook's sweep writes:

            for steps, guarded in ctx.sweep(points, rows):
                with guarded:
                    rows.append(...)
        """
        for point in points:
            if not self.more(len(rows)):
                return
            yield point, self.optional(len(rows))

    def tick(self) -> None:
        """Raise TimeLimitError once HARD_LIMIT x the time limit has passed (checked before every
        point and every timing: a kernel already launched is not interrupted)."""
        if time.monotonic() > self._deadline + (HARD_LIMIT - 1) * self.time_limit_s:
            raise TimeLimitError(
                f"time limit of {HARD_LIMIT:g} x {self.time_limit_s:.0f} s passed"
            )

    def load(self, op: str, module: str) -> ModuleType:
        """`kernels/<op>/<module>.py` of the KB (the bundled one when the KB has no `op`)."""
        return load_op(op, module, kernels_root(self.kb_root, op))

    def peer(self, name: str) -> ModuleType:
        """The adapter of peer library `name` (`flopkb.verify.peers.<name>`: fla, mamba_ssm,
        mamba_cuda), so that code under kernels/ reaches peers without importing the run.
        Importing an adapter never imports the peer itself; its loaders raise PeerUnavailable."""
        import importlib

        if name not in PEERS:
            raise ValueError(f"expected a peer in {', '.join(PEERS)}, got {name!r}")
        return importlib.import_module(f"flopkb.verify.peers.{name}")

    def check(self, label: str, out: Any, ref: Any, *, tol: float | None = None,
              exact: bool = False) -> float:
        """Compare a kernel output with its reference; record it; raise on a mismatch or NaN.

        Relative L2 error ||out - ref|| / ||ref|| against the dtype's tolerance, or bitwise
        equality with `exact` (integer GEMMs). Every element must be finite.
        """
        import torch

        out_t, ref_t = torch.as_tensor(out), torch.as_tensor(ref)
        if out_t.shape != ref_t.shape:
            raise ExperimentError(
                f"{label}: output shape {tuple(out_t.shape)} != reference {tuple(ref_t.shape)}"
            )
        dtype = str(out_t.dtype).removeprefix("torch.")
        if exact:
            err = float((out_t.to(torch.float64) - ref_t.to(torch.float64)).abs().max().item())
            ok, limit = err == 0.0, 0.0
        else:
            o, r = out_t.to(torch.float64), ref_t.to(torch.float64)
            finite = bool(torch.isfinite(o).all().item())
            denom = float(torch.linalg.vector_norm(r).item()) or 1.0
            err = float(torch.linalg.vector_norm(o - r).item()) / denom if finite else math.inf
            limit = tol if tol is not None else TOLERANCES.get(dtype, 2e-2)
            ok = finite and err <= limit
        self.checks.append({"kernel": label, "shape": list(out_t.shape), "dtype": dtype,
                            "error": err, "tolerance": limit, "ok": ok})
        if not ok:
            raise ExperimentError(
                f"{label} disagrees with its reference: error {err:.3g} > {limit:.3g}"
            )
        return err

    def rotations(self, bytes_per_set: int, cap: int = 32) -> int:
        """How many input sets to rotate so that one set is evicted from L2 before it is reused."""
        if bytes_per_set <= 0:
            return 1
        return max(1, min(cap, math.ceil(2 * self.l2_bytes / bytes_per_set)))

    def time(self, label: str, fn, arg_sets, *, flops: float = 0.0, nbytes: float = 0.0,
             rate_scale: float = 1.0, graph: bool = True, decode: bool = False,
             **point: Any) -> Timing:
        """Time `fn(*args)` on the device over rotating `arg_sets` and check it against the
        roofline floor (`flopkb.verify.timing`: CUDA-graph replay wherever capture works).

        Recorded under `label` with how it was timed, its FLOPs, bytes, achieved rates, floor and
        achieved fraction of the floor. A median under FLOOR_MARGIN x floor raises
        ExperimentError: the kernel or the timer is broken. `decode=True` (a decode step, whose
        eager timing would measure launch gaps) refuses a call that cannot be captured instead of
        timing it eagerly. `graph=False` only for a callable that must run eagerly.
        """
        self.tick()
        s = self.settings
        before = _timing.memory_mark()
        try:
            timing = _timing.time_cuda(fn, arg_sets, warmup=s.warmup, reps=s.reps,
                                       budget_ms=s.budget_ms, graph=graph or decode,
                                       require_graph=decode)
        except _timing.CaptureRefused as exc:
            raise ExperimentError(f"{label}: {exc}; a decode step is timed as a CUDA graph "
                                  "replay or not at all") from exc
        entry: dict[str, Any] = {**point, **timing.as_dict(), "flops": flops, "bytes": nbytes,
                                 "rotations": len(arg_sets), **_timing.memory_since(before)}
        seconds = timing.median_ms / 1e3
        if flops:
            entry["tflops"] = flops / seconds / 1e12
        if nbytes:
            entry["gbps"] = nbytes / seconds / 1e9
        if self.ceilings is not None and (flops or nbytes):
            floor = self.ceilings.floor_ms(flops, nbytes, rate_scale)
            entry["floor_ms"] = floor
            entry["roofline_fraction"] = floor / timing.median_ms
            if timing.median_ms < FLOOR_MARGIN * floor:
                self.timings[label] = entry
                raise ExperimentError(
                    f"{label}: {timing.median_ms:.4g} ms is below the roofline floor "
                    f"{floor:.4g} ms from the measured ceilings: broken kernel or timer"
                )
        self.timings[label] = entry
        return timing
