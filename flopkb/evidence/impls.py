"""Implementations as an axis of verify: which code runs each side of an experiment.

A verdict must not hinge on one implementation where an independent one exists. Every experiment
names its sides (e.g. A2 has an "ssd" side and a "scan" side) and, per side, the implementations
that can run it: the bundled kernels, peer libraries (mamba_ssm, fla, Mamba's CUDA scan) and the
libraries that are themselves the subject of a claim (CUB's determinism levels, cuBLAS, SDPA).
The FIRST implementation of a side is its default: the bundled kernel, or the library a claim is
about where that is the subject (D3 is about CUB's algorithm, so CUB comes first there).

`--impl` picks the combinations to judge:
- `bundled`: one combination, every side at its default;
- `peer`: one combination, every side at its first non-default implementation where it has one;
- `all`: every combination (the cartesian product over sides), the default one first.

Plain data: importing this module never imports torch.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

MODES = ("bundled", "peer", "all")


@dataclass(frozen=True)
class ImplInfo:
    """One implementation: what it is and the distribution that provides it (None: flopkb)."""

    name: str
    title: str
    kind: Literal["bundled", "peer", "library"]
    distribution: str | None = None


IMPLS: dict[str, ImplInfo] = {
    i.name: i
    for i in (
        ImplInfo("bundled", "the KB's own kernels (kernels/)", "bundled"),
        ImplInfo("mamba_ssm", "mamba_ssm's Triton SSD (mamba_chunk_scan_combined)", "peer",
                 "mamba_ssm"),
        ImplInfo("fla", "flash-linear-attention (fla-core) Triton kernels", "peer", "fla-core"),
        ImplInfo("mamba_cuda", "Mamba's CUDA selective scan, built from the mamba-ssm source",
                 "peer", "mamba_ssm"),
        ImplInfo("cub", "CUB DeviceReduce::Sum with CCCL 3.x determinism levels", "library",
                 "cuda-cccl"),
        ImplInfo("sdpa", "torch scaled_dot_product_attention, flash backend", "library", "torch"),
        ImplInfo("cublas", "cuBLAS through torch.matmul", "library", "torch"),
        ImplInfo("torch", "plain PyTorch operations (einsum, cumsum, loops)", "library", "torch"),
    )
}


@dataclass(frozen=True)
class Side:
    """One side of an experiment and the implementations that can run it (default first)."""

    name: str
    impls: tuple[str, ...]

    @property
    def default(self) -> str:
        return self.impls[0]


Combination = dict[str, str]


def combinations(sides: tuple[Side, ...], mode: str) -> list[Combination]:
    """The side -> implementation choices `mode` asks for, the all-defaults one first."""
    if mode not in MODES:
        raise ValueError(f"expected --impl one of {', '.join(MODES)}, got {mode!r}")
    default = {s.name: s.default for s in sides}
    if mode == "bundled":
        return [default]
    if mode == "peer":
        return [{s.name: (s.impls[1] if len(s.impls) > 1 else s.default) for s in sides}]
    combos = [dict(zip([s.name for s in sides], choice, strict=True))
              for choice in itertools.product(*(s.impls for s in sides))]
    combos.sort(key=lambda c: c != default)
    return combos


def label(combo: Combination) -> str:
    """'ssd=bundled, scan=mamba_cuda' (stable order: the sides as declared)."""
    return ", ".join(f"{side}={impl}" for side, impl in combo.items())
