"""Computed model parameters: what an architecture record implies, as `hardware` does for parts.

From an architecture record alone (no weights, no torch): parameter count, FLOPs per prompt
token and per decode step, bytes a decode step reads, KV-cache and recurrent-state bytes, the
attention share of layers; and with an accelerator's datasheet values (`flopkb.hardware`), the
roofline bounds of prefill and decode tokens/s and the largest batch that fits in memory.

Notation: d = d_model, L = context (prompt) length, B = batch, b = bytes per element of `dtype`
(bf16 by default: weights, KV cache and state alike). Per sublayer type (biases ignored; one
RMSNorm weight of d per sublayer counted):

- attention (GQA), h heads, g KV heads, head dim e (d / h where the record gives none):
  params d*h*e (Q) + 2*d*g*e (K, V) + h*e*d (O). KV cache 2*g*e*b bytes per token.
  Score and value FLOPs per query over n keys: 4*h*e*n. A causal prompt of L averages
  n = (L + 1) / 2; a decode step at context L attends n = L.
- sliding_attention: as attention with n and the cache capped at the window w.
- mla (multi-head latent attention), ranks r_q (q_lora_rank, null = full-rank queries) and
  r_kv, head dims p (qk_nope), r (qk_rope), v: params d*r_q + r_q*h*(p+r) (or d*h*(p+r)),
  d*(r_kv + r), r_kv*h*(p+v), h*v*d. Cache (r_kv + r)*b bytes per token (the compressed latent).
  Prefill FLOPs per key 2*h*(p+r) + 2*h*v (keys decompressed); decode with the up-projections
  absorbed reads the latent only: 2*h*(r_kv + r) + 2*h*r_kv per key.
- mamba1, d_in = expand*d, state N, conv width k, dt rank R (d/16 rounded up where absent, Mamba's
  default): params d*2*d_in + d_in*(k + 1) + d_in*(R + 2N) + R*d_in + d_in*N + 2*d_in + d_in*d
  (the convolution keeps its bias, Mamba's conv_bias default; the dt projection's bias and D).
  Scan ~7*d_in*N FLOPs per token (discretise, update, read out), conv 2*d_in*k.
  State d_in*N + d_in*(k-1) elements per sequence.
- mamba2, H heads of P, groups G, state N: d_in = H*P; params d*(2*d_in + 2*G*N + H) +
  (d_in + 2*G*N)*(k + 1) + 3*H + d_in + d_in*d (convolution with bias; A, D, dt bias; the
  gated norm). Recurrent form ~5*d_in*N FLOPs per token (the chunked
  SSD prefill does extra intra-chunk work, not counted: the prefill bound is optimistic).
  State H*P*N + (d_in + 2*G*N)*(k-1) elements.
- kda (Kimi Delta Attention), H heads of K (keys and values alike): params q, k, v, o (4*d*H*K),
  low-rank forget and output gates of rank K (2*(d*K + K*H*K), as fla's KimiDeltaAttention
  layer), beta d*H. Delta rule ~7*H*K*K FLOPs per token. State H*K*K + 3*H*K*(k-1) elements.
- mlp with f hidden: 3*d*f params if gated (swiglu), 2*d*f otherwise (relu2, gelu).
- moe, E experts of f_e, top-k, s shared experts: router d*E plus (E + s) experts; a token
  uses k + s of them.
- embeddings vocab*d, plus an output head of vocab*d unless tied.

FLOPs are 2 per multiply-add of the active parameters (the input embedding is a lookup, 0 FLOPs)
plus the attention and scan terms above. A decode step of batch B reads every dense weight once,
the experts B*k tokens can reach (at most E per MoE layer: distinct routing assumed), each
sequence's KV cache, and each sequence's state twice (read, written back).

Rooflines (an upper bound on throughput, never a prediction): prefill of one L-token prompt
takes at least max(L * flops_per_token / F, weight_bytes / W); a decode step of batch B at least
max(bytes_per_step / W, B * flops_per_step / F), with F the tensor FLOP/s of `dtype` and W the HBM
bandwidth. The largest batch that fits at L is floor((M - weight_bytes) / (kv + state bytes per
sequence)) for memory capacity M; activations and workspace are not counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flopkb.model import ArchitectureRecord, LayerType
from flopkb.model.architecture import ATTENTION_TYPES, RECURRENT_TYPES

BYTES_PER_ELEMENT = {"bf16": 2, "fp16": 2, "fp32": 4}
# The FLOP/s quantity a dtype's matmuls run at. fp32 is true fp32 (CUDA cores): TF32 tensor-core
# matmuls round the inputs to 10 mantissa bits, a different computation.
FLOPS_QUANTITY = {
    "bf16": "bf16_tensor_flops", "fp16": "fp16_tensor_flops", "fp32": "fp32_simt_flops",
}  # fmt: skip
# datasheet units: TFLOP/s, TB/s, GB (decimal, as vendors print them)
UNIT_SCALE = {"bf16_tensor_flops": 1e12, "fp16_tensor_flops": 1e12, "fp32_simt_flops": 1e12,
              "hbm_bandwidth": 1e12, "memory_capacity": 1e9}  # fmt: skip
ROOFLINE_QUANTITIES = ("hbm_bandwidth", "memory_capacity")


class ArchitectureError(ValueError):
    """The record lacks a size a layer type it uses needs; the message names it."""


@dataclass(frozen=True)
class Sublayer:
    params: float  # parameters stored
    active: float  # parameters a token uses
    flops_token: float  # FLOPs per token outside the context-dependent terms
    kv_per_token: float  # cache elements per token of context (attention)
    window: int | None  # cache capped at this many tokens (sliding window)
    key_flops_prefill: float  # FLOPs per (query, key) pair in prefill
    key_flops_decode: float  # FLOPs per key in a decode step
    state: float  # recurrent state elements per sequence
    expert_params: float = 0.0  # one routed expert's parameters (moe)
    experts: int = 0
    top_k: int = 0


@dataclass
class Costs:
    """Everything computed for one architecture at (context, batch, dtype)."""

    architecture: str
    context: int
    batch: int
    dtype: str
    state_dtype: str
    layers: int
    counts: dict[str, int]
    parameters: float
    active_parameters: float
    attention_share: float  # % of layers holding an attention sublayer
    linear_to_attention: float | None
    prefill_flops_per_token: float
    decode_flops_per_step: float  # per sequence
    kv_cache_bytes: float  # whole batch
    state_bytes: float  # whole batch
    weight_bytes: float
    decode_weight_bytes: float  # weights one decode step of the batch reads
    decode_bytes_per_step: float  # weights + KV + state (read and written)
    assumptions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _value(arch: ArchitectureRecord, key: str) -> Any:
    entry = getattr(arch.config, key)
    return None if entry is None else entry.value


def _need(arch: ArchitectureRecord, key: str, what: str) -> int:
    value = _value(arch, key)
    if value is None:
        raise ArchitectureError(f"{arch.id}: {what} needs config.{key}, which the record lacks")
    return int(value)


def _needs(arch: ArchitectureRecord, what: str, *keys: str) -> tuple[int, ...]:
    """The sizes `what` cannot be counted without, in the order asked (`_need` for each)."""
    return tuple(_need(arch, key, what) for key in keys)


def sublayer_types(arch: ArchitectureRecord) -> tuple[list[list[LayerType]], Counter[LayerType]]:
    """The layers as lists of sublayer types (from the pattern), or no order but the counts."""
    layers = arch.layers
    if layers.counts is not None:
        return [], Counter(layers.counts)
    text = (layers.pattern or "") * layers.repeat
    width = layers.layer_width
    grouped = [[layers.legend[c] for c in text[i : i + width]] for i in range(0, len(text), width)]
    return grouped, Counter(t for layer in grouped for t in layer)


def layer_count(arch: ArchitectureRecord) -> int:
    grouped, counts = sublayer_types(arch)
    return len(grouped) if grouped else sum(counts.values())


def attention_share(arch: ArchitectureRecord) -> float:
    """% of layers (as the model counts them) that hold an attention sublayer."""
    grouped, counts = sublayer_types(arch)
    if grouped:
        with_attention = sum(1 for layer in grouped if ATTENTION_TYPES & set(layer))
        return 100.0 * with_attention / len(grouped)
    return 100.0 * sum(counts[t] for t in ATTENTION_TYPES) / sum(counts.values())


def linear_to_attention(arch: ArchitectureRecord) -> float | None:
    """Recurrent mixers (Mamba, KDA) per attention mixer; None without attention."""
    _, counts = sublayer_types(arch)
    attn = sum(counts[t] for t in ATTENTION_TYPES)
    return sum(counts[t] for t in RECURRENT_TYPES) / attn if attn else None


def _sublayer(arch: ArchitectureRecord, kind: LayerType, assumptions: set[str]) -> Sublayer:
    d = _need(arch, "d_model", "every layer")
    norm = float(d)
    if kind in (LayerType.attention, LayerType.sliding_attention):
        h, g = _needs(arch, "attention", "attention_heads", "kv_heads")
        e = _value(arch, "head_dim")
        if e is None:
            e = d // h
            assumptions.add("head_dim = d_model / attention_heads where the record gives none")
        window = None
        if kind is LayerType.sliding_attention:
            window = _need(arch, "sliding_window", "sliding_attention")
        p = d * h * e + 2 * d * g * e + h * e * d
        return Sublayer(p + norm, p + norm, 2 * p, 2 * g * e, window, 4 * h * e, 4 * h * e, 0)
    if kind is LayerType.mla:
        h, r_kv, nope, rope, v = _needs(arch, "mla", "attention_heads", "kv_lora_rank",
                                        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
        r_q = _value(arch, "q_lora_rank")
        q = d * h * (nope + rope) if r_q is None else d * r_q + r_q * h * (nope + rope)
        p = q + d * (r_kv + rope) + r_kv * h * (nope + v) + h * v * d + r_kv
        prefill_key = 2 * h * (nope + rope) + 2 * h * v
        decode_key = 2 * h * (r_kv + rope) + 2 * h * r_kv
        return Sublayer(p + norm, p + norm, 2 * p, r_kv + rope, None, prefill_key, decode_key, 0)
    if kind is LayerType.mamba1:
        expand, n = _needs(arch, "mamba1", "ssm_expand", "ssm_state_size")
        d_in = expand * d
        k = _value(arch, "ssm_conv_width")
        if k is None:
            k = 0
            assumptions.add("no conv width recorded: the convolution is not counted")
        r = _value(arch, "ssm_dt_rank")
        if r is None:
            r = math.ceil(d / 16)
            assumptions.add("Mamba dt rank = ceil(d_model / 16) (Mamba's default) where absent")
        matmul = d * 2 * d_in + d_in * (r + 2 * n) + r * d_in + d_in * d
        p = matmul + d_in * (k + 1 if k else 0) + d_in * n + 2 * d_in
        flops = 2 * matmul + 7 * d_in * n + 2 * d_in * k
        state = d_in * n + d_in * max(k - 1, 0)
        return Sublayer(p + norm, p + norm, flops, 0, None, 0, 0, state)
    if kind is LayerType.mamba2:
        heads, hd, n, groups, k = _needs(arch, "mamba2", "ssm_heads", "ssm_head_dim",
                                         "ssm_state_size", "ssm_groups", "ssm_conv_width")
        d_in = heads * hd
        conv_ch = d_in + 2 * groups * n
        matmul = d * (2 * d_in + 2 * groups * n + heads) + d_in * d
        p = matmul + conv_ch * (k + 1) + 3 * heads + d_in
        flops = 2 * matmul + 5 * d_in * n + 2 * conv_ch * k
        state = d_in * n + conv_ch * (k - 1)
        assumptions.add("Mamba-2 prefill counted in its recurrent form (SSD's intra-chunk work "
                        "is not: the prefill bound is optimistic)")  # fmt: skip
        return Sublayer(p + norm, p + norm, flops, 0, None, 0, 0, state)
    if kind is LayerType.kda:
        heads, kd, k = _needs(arch, "kda", "linear_heads", "linear_head_dim", "linear_conv_width")
        width = heads * kd
        matmul = 4 * d * width + 2 * (d * kd + kd * width) + d * heads
        p = matmul + 3 * width * k + 2 * heads
        flops = 2 * matmul + 7 * heads * kd * kd + 2 * 3 * width * k
        state = heads * kd * kd + 3 * width * (k - 1)
        assumptions.add("KDA gates counted as fla's KimiDeltaAttention layer (low rank, rank "
                        "head_dim)")  # fmt: skip
        return Sublayer(p + norm, p + norm, flops, 0, None, 0, 0, state)
    activation = _value(arch, "mlp_activation")
    matrices = 2 if activation is not None and activation.value in ("relu2", "gelu") else 3
    if activation is None:
        assumptions.add("MLP taken as gated (three matrices) where no activation is recorded")
    if kind is LayerType.mlp:
        f = _need(arch, "mlp_size", "mlp")
        p = matrices * d * f
        return Sublayer(p + norm, p + norm, 2 * p, 0, None, 0, 0, 0)
    experts, top_k, f_e = _needs(arch, "moe", "experts", "experts_per_token", "expert_mlp_size")
    shared = _value(arch, "shared_experts") or 0
    one = matrices * d * f_e
    router = d * experts
    p = router + (experts + shared) * one
    active = router + (top_k + shared) * one
    return Sublayer(p + norm, active + norm, 2 * active, 0, None, 0, 0, 0, one, experts, top_k)


def _mean_keys(context: int, window: int | None) -> float:
    """Mean keys a causal prompt's queries attend: (1/L) * sum over i of min(i, w)."""
    if window is None or context <= window:
        return (context + 1) / 2
    return (window * (window + 1) / 2 + (context - window) * window) / context


def compute(
    arch: ArchitectureRecord,
    context: int = 4096,
    batch: int = 1,
    dtype: str = "bf16",
    state_dtype: str | None = None,
) -> Costs:
    """The computed parameters of `arch` at prompt/context length `context` and batch `batch`."""
    if dtype not in BYTES_PER_ELEMENT:
        raise ArchitectureError(f"expected dtype one of {sorted(BYTES_PER_ELEMENT)}, got {dtype!r}")
    state_dtype = state_dtype or dtype
    if state_dtype not in BYTES_PER_ELEMENT:
        raise ArchitectureError(f"expected state dtype one of {sorted(BYTES_PER_ELEMENT)}")
    if not (1 <= context <= 2**40 and 1 <= batch <= 2**30):
        raise ArchitectureError("expected 1 <= context <= 2^40 and 1 <= batch <= 2^30")
    b, bs = BYTES_PER_ELEMENT[dtype], BYTES_PER_ELEMENT[state_dtype]
    assumptions: set[str] = set()
    _, counts = sublayer_types(arch)
    params = active = flops_prefill = flops_decode = 0.0
    kv_per_seq = state_per_seq = 0.0
    dense_weights = 0.0
    expert_bytes_decode = 0.0
    for kind, n in counts.items():
        s = _sublayer(arch, kind, assumptions)
        params += n * s.params
        active += n * s.active
        keys_prefill = _mean_keys(context, s.window)
        keys_decode = min(context, s.window) if s.window else context
        flops_prefill += n * (s.flops_token + s.key_flops_prefill * keys_prefill)
        flops_decode += n * (s.flops_token + s.key_flops_decode * keys_decode)
        kv_per_seq += n * s.kv_per_token * keys_decode * b
        state_per_seq += n * s.state * bs
        if s.experts:
            reached = min(s.experts, batch * s.top_k)
            dense_weights += n * (s.params - s.experts * s.expert_params)
            expert_bytes_decode += n * reached * s.expert_params * b
        else:
            dense_weights += n * s.params
    vocab = _value(arch, "vocab_size")
    d = _need(arch, "d_model", "every layer")
    if vocab is None:
        assumptions.add("no vocabulary recorded: embeddings and output head are not counted")
    else:
        tied = _value(arch, "tied_embeddings")
        head = 0 if tied else vocab * d
        params += vocab * d + head + d
        active += vocab * d + head + d
        # the output projection runs for every token; the input embedding is a lookup
        flops_prefill += 2 * vocab * d
        flops_decode += 2 * vocab * d
        dense_weights += (head if head else vocab * d) + d
    kv = kv_per_seq * batch
    state = state_per_seq * batch
    decode_weights = dense_weights * b + expert_bytes_decode
    if any(k in counts for k in (LayerType.moe,)):
        assumptions.add("a decode step reads min(experts, batch * top-k) experts per MoE layer")
    return Costs(
        architecture=arch.id,
        context=context,
        batch=batch,
        dtype=dtype,
        state_dtype=state_dtype,
        layers=layer_count(arch),
        counts={k.value: v for k, v in sorted(counts.items(), key=lambda kv: kv[0].value)},
        parameters=params,
        active_parameters=active,
        attention_share=attention_share(arch),
        linear_to_attention=linear_to_attention(arch),
        prefill_flops_per_token=flops_prefill,
        decode_flops_per_step=flops_decode,
        kv_cache_bytes=kv,
        state_bytes=state,
        weight_bytes=params * b,
        decode_weight_bytes=decode_weights,
        decode_bytes_per_step=decode_weights + kv + 2 * state,
        assumptions=sorted(assumptions),
    )


# the largest batch a float counts exactly; a quotient beyond it is no batch size
_MAX_BATCH = 2**53


@dataclass(frozen=True)
class Roofline:
    """Upper bounds on one accelerator; None where an input is missing (with the reason), or
    where an input or a bound leaves floating point's finite range (`out_of_range` says which:
    `memory_capacity: 1e300` GB is 1e309 bytes, infinite as a float)."""

    accelerator: str
    prefill_tokens_per_s: float | None
    decode_tokens_per_s: float | None  # whole batch
    decode_tokens_per_s_per_sequence: float | None
    max_batch: int | None
    bound: dict[str, str]  # phase -> "compute" | "memory"
    note: str | None = None
    out_of_range: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _quotient(a: float, b: float) -> float | None:
    """a / b when it is a finite positive number; None for 0/0, overflow or underflow to 0."""
    if b <= 0 or not math.isfinite(a) or not math.isfinite(b):
        return None
    out = a / b
    return out if math.isfinite(out) and out > 0 else None


def roofline(costs: Costs, accelerator: str, hw: Mapping[str, float | None]) -> Roofline:
    """Bounds of `costs` on a part whose datasheet values (in KB units: TFLOP/s, TB/s, GB) are
    `hw`, keyed by quantity id; the formulas are in the module docstring. Never raises on
    absurd values: a rate beyond the float range only makes its time 0 (the other limit then
    decides), but a bound that is not a finite positive number, or a largest batch beyond what
    a float counts, is None with the reason in `out_of_range`."""
    flops_q = FLOPS_QUANTITY[costs.dtype]
    missing = [q for q in (flops_q, *ROOFLINE_QUANTITIES) if hw.get(q) is None]
    if missing:
        return Roofline(
            accelerator, None, None, None, None, {}, f"no value for {', '.join(missing)}"
        )
    peak = float(hw[flops_q]) * UNIT_SCALE[flops_q]  # type: ignore[arg-type]
    bandwidth = float(hw["hbm_bandwidth"]) * UNIT_SCALE["hbm_bandwidth"]  # type: ignore[arg-type]
    capacity_gb = float(hw["memory_capacity"])  # type: ignore[arg-type]
    capacity = capacity_gb * UNIT_SCALE["memory_capacity"]
    if peak <= 0 or bandwidth <= 0:
        return Roofline(accelerator, None, None, None, None, {}, "zero FLOP/s or bandwidth")
    prefill_compute = costs.context * costs.prefill_flops_per_token / peak
    prefill_memory = costs.weight_bytes / bandwidth
    prefill = _quotient(costs.context, max(prefill_compute, prefill_memory))
    decode_memory = costs.decode_bytes_per_step / bandwidth
    decode_compute = costs.batch * costs.decode_flops_per_step / peak
    decode = _quotient(costs.batch, max(decode_memory, decode_compute))
    if prefill is None or decode is None:
        reason = (f"out of range: a tokens/s bound on {accelerator} is not a finite positive "
                  f"number ({flops_q} and hbm_bandwidth far beyond any device)")  # fmt: skip
        return Roofline(accelerator, None, None, None, None, {}, reason, reason)
    bound = {
        "prefill": "compute" if prefill_compute >= prefill_memory else "memory",
        "decode": "compute" if decode_compute >= decode_memory else "memory",
    }
    per_seq = (costs.kv_cache_bytes + costs.state_bytes) / costs.batch
    free = capacity - costs.weight_bytes
    note = out_of_range = None
    max_batch: int | None = None
    if not math.isfinite(capacity):
        note = out_of_range = (f"out of range: memory_capacity = {capacity_gb:g} GB is not a "
                               "finite number of bytes")  # fmt: skip
    elif free <= 0:
        max_batch = 0
        note = "the weights alone do not fit in memory"
    elif per_seq <= 0:
        note = "no per-sequence cache: memory does not limit the batch"
    elif not free // per_seq < _MAX_BATCH:
        note = out_of_range = (f"out of range: memory_capacity = {capacity_gb:g} GB allows a "
                               f"batch beyond {_MAX_BATCH:.3g} sequences")  # fmt: skip
    else:
        max_batch = int(free // per_seq)
    return Roofline(
        accelerator, prefill, decode, decode / costs.batch, max_batch, bound, note, out_of_range
    )
