"""The least work one timed serving sublayer does: bytes and FLOPs of a prefill or decode call of
one layer type, from the same per-sublayer counts as `flopkb.architecture.cost` (torch-free).

One sublayer of type t (cost.py's notation), `batch` B, `tokens` (prompt length L in prefill,
cached context in decode):

- weights: its parameters once, bf16, less its norm (the timed sublayers run none); a MoE layer
  reads the router, the shared experts and the routed experts its tokens reach: min(E, B K) at
  most, E (1 - (1 - K/E)^(B T)) expected under random routing (what the builders draw), used here;
- KV / latent: a decode step reads each sequence's cache once (attention 2 g e per token,
  sliding window capped at w, MLA the (r_kv + rope) latent), bf16;
- state (Mamba-1/2, KDA): a decode step reads and writes each sequence's recurrent state, fp32 as
  the builders and the bundled steps keep it, and its short-convolution state, bf16 (KDA's
  timed layer has no convolution: not counted);
- activations: x read and y written, rows x d_model bf16 each;
- FLOPs: rows x (cost.py's per-token FLOPs of the active parameters + the per-key term over the
  keys attended: L in decode, the causal mean in prefill).

Floor time = max(bytes / copy bandwidth, FLOPs / dense bf16 rate) with the ceilings the run
measured (`flopkb.verify.context.Ceilings.floor_ms`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flopkb.architecture.cost import _mean_keys, _need, _sublayer, _value
from flopkb.model import ArchitectureRecord, LayerType

BF16, FP32 = 2, 4


@dataclass(frozen=True)
class LayerWork:
    """Bytes (by part) and FLOPs of one sublayer call."""

    kind: str
    phase: str
    flops: float
    parts: dict[str, float]  # weights, kv, state, activations: bytes

    @property
    def bytes(self) -> float:
        return sum(self.parts.values())

    def as_dict(self) -> dict[str, Any]:
        return {"flops": self.flops, "bytes": self.bytes, **{f"{k}_bytes": v
                                                            for k, v in self.parts.items()}}


def expected_experts(experts: int, top_k: int, tokens: int) -> float:
    """Distinct experts `tokens` tokens reach, each picking top_k distinct ones uniformly."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def _conv_elements(arch: ArchitectureRecord, kind: LayerType) -> int:
    """Short-convolution state elements per sequence the timed layer keeps (k - 1 per channel)."""
    d = _need(arch, "d_model", "every layer")
    if kind is LayerType.mamba1:
        k = _value(arch, "ssm_conv_width") or 0
        return _need(arch, "ssm_expand", "mamba1") * d * max(k - 1, 0)
    if kind is LayerType.mamba2:
        channels = (_need(arch, "ssm_heads", "mamba2") * _need(arch, "ssm_head_dim", "mamba2")
                    + 2 * _need(arch, "ssm_groups", "mamba2")
                    * _need(arch, "ssm_state_size", "mamba2"))
        return channels * (_need(arch, "ssm_conv_width", "mamba2") - 1)
    return 0


def layer_work(arch: ArchitectureRecord, kind: str | LayerType, phase: str, batch: int,
               tokens: int) -> LayerWork:
    """The work of one `kind` sublayer: `phase` 'prefill' (batch prompts of `tokens`) or
    'decode' (one step of batch sequences at `tokens` cached)."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"expected phase 'prefill' or 'decode', got {phase!r}")
    if batch < 1 or tokens < 1:
        raise ValueError(f"expected batch >= 1 and tokens >= 1, got {batch}, {tokens}")
    t = LayerType(kind)
    s = _sublayer(arch, t, set())
    d = _need(arch, "d_model", "every layer")
    rows = batch if phase == "decode" else batch * tokens
    weights = s.params - d
    if s.experts:
        reached = expected_experts(s.experts, s.top_k, rows)
        weights -= (s.experts - reached) * s.expert_params
    parts = {"weights": weights * BF16, "kv": 0.0, "state": 0.0,
             "activations": 2.0 * rows * d * BF16}
    if phase == "decode":
        keys = min(tokens, s.window) if s.window else tokens
        parts["kv"] = float(batch * s.kv_per_token * keys * BF16)
        conv = _conv_elements(arch, t)
        recurrent = s.state - conv
        if t is LayerType.kda:  # the timed KDA layer keeps no convolution state
            recurrent = _need(arch, "linear_heads", "kda") * _need(arch, "linear_head_dim",
                                                                     "kda") ** 2
        parts["state"] = 2.0 * batch * (recurrent * FP32 + conv * BF16)
        flops = batch * (s.flops_token + s.key_flops_decode * keys)
    else:
        flops = rows * (s.flops_token + s.key_flops_prefill * _mean_keys(tokens, s.window))
    return LayerWork(t.value, phase, float(flops), parts)
