"""A stacked reduced-depth model of an architecture: the serving experiment's own sublayers
(`prefill.prefill_layer`, `decode.decode_layer`, or any builder of the same signature) run one
after another on one residual stream, each behind an RMSNorm, `h = h + layer(norm(h))`, with a
final RMSNorm. It checks the composition: `time_stacked` times the whole stack end to end and
each of its layers alone (same builds, same shapes, same implementations), so the serving
evidence can state stacked / composed.

Depth (`stack_kinds`): one pattern period where the record repeats one of 4 to 8 layers, whole
periods up to at least 4 layers where a period is shorter (Llama: `*-` x 4), else the shortest
layer-aligned window of 4 to 8 layers holding every layer type of the model (Nemotron-H 8B:
`M-M*`; Kimi Linear: `K-KEKEAE`).

Decode: caches and states are the builders' own static tensors (random, never a real prefill;
attention reads a cache of `context` tokens and the new token's K/V append is not run, as in the
per-layer timings). `GraphedStep` captures the whole step in one CUDA graph over a static input
buffer, as serving engines run decode; on the CPU (tests) it runs the same step eagerly.
Prefill: the stacked forward of `batch` prompts of `length` tokens, timed the same way.

Shapes: the residual stream is [rows, d_model], rows = batch (decode) or batch * length
(prefill); each layer is fed the normed stream viewed as its own input's shape ([B, L, D] or
[rows, D]) and returns [rows, D].
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from ._build import DT, Maker, kind_of

# RMSNorm epsilon of the modelled families (HF's Llama / Nemotron-H / Kimi configs: 1e-5 or 1e-6;
# the time does not depend on it).
EPS = 1e-5
MIN_LAYERS, MAX_LAYERS = 4, 8
# seeds of the stack's layers: layer i is built from seed SEED_STRIDE * (i + 1) + base, so two
# layers of one type get different weights and a rebuild from the same base is identical
SEED_STRIDE = 7919


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """x [rows, D] bf16, weight [D] bf16 -> x / rms(x) * weight: torch's `rms_norm`, one kernel
    on CUDA as serving engines' fused norms are (an fp32 chain of seven would weigh a decode
    step's time with launches no engine makes)."""
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def _sublayers(arch: Any) -> tuple[list[str], int]:
    """The record's sublayer types in order (pattern x repeat) and the sublayers per layer."""
    layers = arch.layers
    if getattr(layers, "pattern", None) is None:
        raise ValueError(f"{arch.id}: a stacked model needs a layer pattern, got counts only")
    legend = {c: kind_of(t) for c, t in layers.legend.items()}
    return [legend[c] for c in layers.pattern], int(getattr(layers, "layer_width", 1) or 1)


def stack_kinds(arch: Any) -> list[str]:
    """The sublayer types of the reduced-depth stack (module docstring: which depth and why)."""
    one, width = _sublayers(arch)
    period_layers = len(one) // width
    if getattr(arch.layers, "repeat", 1) > 1 and period_layers <= MAX_LAYERS:
        periods = -(-MIN_LAYERS // period_layers)
        while periods > 1 and periods * period_layers > MAX_LAYERS:
            periods -= 1
        return one * periods
    full = one * int(getattr(arch.layers, "repeat", 1))
    types = set(full)
    n_layers = len(full) // width
    for size in range(MIN_LAYERS, MAX_LAYERS + 1):
        for start in range(0, max(1, n_layers - size + 1)):
            window = full[start * width:(start + size) * width]
            if set(window) == types:
                return window
    return full[: MAX_LAYERS * width]  # no window holds every type: the first 8 layers


@dataclass
class Stacked:
    """Built layers run on one residual stream. `layers[i]` is (fn, args) of sublayer `kinds[i]`;
    `norms[i]` its pre-norm weight [D] (`norms[-1]`: the final norm)."""

    kinds: list[str]
    layers: list[tuple[Callable[..., Any], tuple]]
    norms: list[torch.Tensor]
    x: torch.Tensor  # the stack's input [rows, D]
    phase: str
    meta: dict[str, Any] = field(default_factory=dict)

    def glue(self, x: torch.Tensor) -> torch.Tensor:
        """The stack's own work without its layers: every norm and residual add on x [rows, D]
        (`h = h + norm(h)` per layer, then the final norm), so stacked ~ composed + glue."""
        h = x
        for w in self.norms[:-1]:
            h = h + rms_norm(h, w)
        return rms_norm(h, self.norms[-1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [rows, D] -> the final-normed residual stream [rows, D]."""
        h = x
        for (fn, args), w in zip(self.layers, self.norms, strict=False):
            h = h + fn(rms_norm(h, w).view(args[0].shape)).view(h.shape)
        return rms_norm(h, self.norms[-1])


def build_stack(ctx: Any, arch: Any, phase: str, batch: int, tokens: int, *,
                kinds: Sequence[str] | None = None, builder: Callable[..., Any] | None = None,
                seed: int = 0) -> Stacked:
    """The stack of `arch` for `phase` ('prefill': `batch` prompts of `tokens`; 'decode': one
    step of `batch` sequences at `tokens` cached). `builder(ctx, arch, kind, batch, tokens,
    seed=...)` defaults to the serving experiment's own layer builder of the phase."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"expected phase 'prefill' or 'decode', got {phase!r}")
    if batch < 1 or tokens < 1:
        raise ValueError(f"expected batch >= 1 and tokens >= 1, got {batch}, {tokens}")
    if builder is None:
        module = ctx.load("layers", phase)
        builder = module.prefill_layer if phase == "prefill" else module.decode_layer
    kinds = list(kinds) if kinds is not None else stack_kinds(arch)
    layers = [builder(ctx, arch, k, batch, tokens, seed=seed + SEED_STRIDE * (i + 1))
              for i, k in enumerate(kinds)]
    m = Maker(ctx, seed)
    d = layers[0][1][0].shape[-1]
    norms = [(1.0 + 0.1 * m.randn(d, dtype=torch.float32)).to(DT) for _ in range(len(kinds) + 1)]
    rows = batch if phase == "decode" else batch * tokens
    return Stacked(kinds, layers, norms, m.randn(rows, d).to(DT), phase,
                   {"arch": arch.id, "batch": batch, "tokens": tokens, "seed": seed})


# A closure tensor of at most this many bytes is saved before a capture's warm-up and put back
# after it (the recurrent and conv states the warm-up steps advance); KV caches, larger, are only
# read by the decode builders and stay as they are.
SNAPSHOT_MAX_BYTES = 256 << 20


def _closure_tensors(stacked: Stacked) -> list[torch.Tensor]:
    """The tensors the stack's layer functions hold (weights, caches, states), by identity."""
    seen: dict[int, torch.Tensor] = {}
    for fn, _ in stacked.layers:
        for cell in getattr(fn, "__closure__", None) or ():
            value = cell.cell_contents
            if isinstance(value, torch.Tensor):
                seen.setdefault(id(value), value)
    return list(seen.values())


class StateGuard:
    """Saves the stack's small closure tensors on entry and puts every one back on exit, so
    warm-up steps of a capture leave the recurrent states as built. A value compare, not the
    version counter: Triton kernels write states through pointers, which no counter sees.
    `restored` counts the saved tensors that had changed; tensors over `max_bytes` (KV caches,
    which the decode builders only read) are not saved, and `unrestored` lists the shapes of
    those whose version counter moved (a torch in-place write)."""

    def __init__(self, stacked: Stacked, max_bytes: int = SNAPSHOT_MAX_BYTES) -> None:
        self.tensors = _closure_tensors(stacked)
        self.max_bytes = max_bytes
        self.unrestored: list[tuple[int, ...]] = []
        self.restored = 0

    def __enter__(self) -> StateGuard:
        self.versions = [t._version for t in self.tensors]
        self.saved = [t.clone() if t.numel() * t.element_size() <= self.max_bytes else None
                      for t in self.tensors]
        return self

    def __exit__(self, *exc: object) -> None:
        for t, v, saved in zip(self.tensors, self.versions, self.saved, strict=True):
            if saved is None:
                if t._version != v:
                    self.unrestored.append(tuple(t.shape))
            elif not torch.equal(t, saved):
                t.copy_(saved)
                self.restored += 1
        self.saved = []


class GraphedStep:
    """`stacked.forward` over a static input buffer, captured once in one CUDA graph on a CUDA
    device (every layer's launches in it, host work none), run eagerly elsewhere. Calling it
    copies x [rows, D] into the buffer and returns the static output (overwritten by the next
    call). The capture's warm-up steps run under a `StateGuard`, so the first call is the first
    step from the built states. A step that cannot be captured raises at construction: the
    caller states the refusal."""

    def __init__(self, stacked: Stacked, warmup: int = 2) -> None:
        self.stacked = stacked
        self.static_x = stacked.x.clone()
        self.graph: Any = None
        self.static_out: torch.Tensor = self.static_x  # the graph's output once captured
        self.unrestored: list[tuple[int, ...]] = []
        if self.static_x.device.type != "cuda":
            return
        with StateGuard(stacked) as guard:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(max(1, warmup)):
                    stacked.forward(self.static_x)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.static_out = stacked.forward(self.static_x)
            torch.cuda.synchronize()
            self.graph = graph
        self.unrestored = guard.unrestored

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x [rows, D] -> the step's output [rows, D] (the static buffer)."""
        self.static_x.copy_(x)
        return self.replay()

    def replay(self) -> torch.Tensor:
        """One step on what the buffer holds (for timing: no copy)."""
        if self.graph is None:
            self.static_out = self.stacked.forward(self.static_x)
        else:
            self.graph.replay()
        return self.static_out


@dataclass(frozen=True)
class StackedTiming:
    """Stacked and composed ms per call (medians over rounds), their ratio, and the parts.
    `glue_ms`: the stack's norms and residual adds alone (`Stacked.glue`), which the stack
    runs and the composed sum leaves out; `ratio_with_glue` = stacked / (composed + glue)."""

    arch: str
    phase: str
    batch: int
    tokens: int
    kinds: list[str]
    stacked_ms: float
    composed_ms: float
    glue_ms: float
    per_layer_ms: list[float]
    round_ratios: list[float]
    how: str

    @property
    def ratio(self) -> float:
        return self.stacked_ms / self.composed_ms if self.composed_ms > 0 else float("inf")

    @property
    def ratio_with_glue(self) -> float:
        total = self.composed_ms + self.glue_ms
        return self.stacked_ms / total if total > 0 else float("inf")

    def as_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "phase": self.phase, "batch": self.batch,
                "tokens": self.tokens, "kinds": self.kinds, "stacked_ms": self.stacked_ms,
                "composed_ms": self.composed_ms, "glue_ms": self.glue_ms, "ratio": self.ratio,
                "ratio_with_glue": self.ratio_with_glue, "per_layer_ms": self.per_layer_ms,
                "round_ratios": self.round_ratios, "how": self.how}


def time_stacked(ctx: Any, arch: Any, phase: str, batch: int, tokens: int, *,
                 kinds: Sequence[str] | None = None, builder: Callable[..., Any] | None = None,
                 rounds: int = 3, seed: int = 0) -> StackedTiming:
    """Time the stack of `arch` end to end, each of its layers alone and its glue (norms and
    residual adds) alone, in `rounds` interleaved rounds (stack, every layer, glue, per round),
    through `ctx.time` (CUDA-graph replay; a decode step that cannot be captured is refused by
    it, never timed eagerly). Returns medians over rounds: stacked ms, composed ms (the sum of
    the layers' ms), glue ms and the per-layer ms."""
    if rounds < 1:
        raise ValueError(f"expected rounds >= 1, got {rounds}")
    stacked = build_stack(ctx, arch, phase, batch, tokens, kinds=kinds, builder=builder,
                          seed=seed)
    decode = phase == "decode"
    at = f"{arch.id} stacked {phase} B={batch} {'L' if decode else 'T'}={tokens}"
    stack_ms: list[float] = []
    glue_ms: list[float] = []
    layer_ms: list[list[float]] = [[] for _ in stacked.layers]
    with torch.no_grad():
        for r in range(rounds):
            t = ctx.time(f"{at} [{'+'.join(stacked.kinds)}] round {r}", stacked.forward,
                         [(stacked.x,)], decode=decode, batch=batch, steps=tokens)
            stack_ms.append(t.median_ms)
            for i, ((fn, args), kind) in enumerate(zip(stacked.layers, stacked.kinds,
                                                       strict=True)):
                t = ctx.time(f"{at} layer {i} {kind} round {r}", fn, [args], decode=decode,
                             batch=batch, steps=tokens)
                layer_ms[i].append(t.median_ms)
            t = ctx.time(f"{at} glue round {r}", stacked.glue, [(stacked.x,)], decode=decode,
                         batch=batch, steps=tokens)
            glue_ms.append(t.median_ms)
    sums = [sum(col[r] for col in layer_ms) for r in range(rounds)]
    return StackedTiming(
        arch=arch.id, phase=phase, batch=batch, tokens=tokens, kinds=list(stacked.kinds),
        stacked_ms=statistics.median(stack_ms), composed_ms=statistics.median(sums),
        glue_ms=statistics.median(glue_ms),
        per_layer_ms=[statistics.median(col) for col in layer_ms],
        round_ratios=[s / c if c > 0 else float("inf") for s, c in zip(stack_ms, sums,
                                                                        strict=True)],
        how="ctx.time: CUDA-graph replay of the whole step / forward, of each layer alone and "
            "of the norms + residual adds alone (graph capture required for decode), medians "
            "over interleaved rounds")
