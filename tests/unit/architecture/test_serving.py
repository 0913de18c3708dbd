"""Serving composition (flopkb.architecture.serving) with fake per-layer timings: counts from the
records, hand sums, intervals, and the two batch readings of a memory-limited claim."""

from __future__ import annotations

import pytest

from flopkb.architecture.serving import (
    ServingError,
    compose,
    layer_counts,
    memory_limited_batch,
    ratio,
    reading,
)
from flopkb.architecture.show import hardware_values
from flopkb.evidence.stats import Interval
from flopkb.hardware.model import HardwareModel
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.paths import bundled_root


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def test_counts_come_from_the_pattern(kb: KnowledgeBase) -> None:
    assert layer_counts(kb.architectures["samba-1-7b"]) == {
        "mamba1": 12, "mlp": 24, "sliding_attention": 12}
    assert layer_counts(kb.architectures["nemotron-h-8b"]) == {
        "attention": 4, "mamba2": 24, "mlp": 24}


def test_composition_reproduces_the_hand_sum(kb: KnowledgeBase) -> None:
    counts = layer_counts(kb.architectures["samba-1-7b"])
    prefill = {"mamba1": 0.003, "sliding_attention": 0.002, "mlp": 0.005}
    decode = {"mamba1": 1e-4, "sliding_attention": 2e-4, "mlp": 3e-4}
    c = compose("samba-1-7b", counts, prefill, decode, prompt_length=1000, decode_context=1000,
                decode_batch=16, prefill_batch=2)
    # 12 * 3 ms + 12 * 2 ms + 24 * 5 ms = 180 ms
    assert c.prefill_s.value == pytest.approx(0.180)
    assert c.prefill_tokens_per_s.value == pytest.approx(2 * 1000 / 0.180)
    # 12 * 0.1 ms + 12 * 0.2 ms + 24 * 0.3 ms = 10.8 ms
    assert c.decode_step_s.value == pytest.approx(0.0108)
    assert c.tpot_ms.value == pytest.approx(10.8)
    assert c.decode_tokens_per_s_per_sequence.value == pytest.approx(1 / 0.0108)
    assert c.decode_tokens_per_s.value == pytest.approx(16 / 0.0108)
    # 16 prompts (8x the timed 2) then 10 steps: 160 tokens in 8 * 0.180 + 10 * 0.0108 s
    assert c.end_to_end_tokens_per_s(10).value == pytest.approx(160 / (1.44 + 0.108))


def test_bands_add_and_ratios_take_conservative_corners() -> None:
    counts = {"attention": 2, "mlp": 1}
    t = {"attention": Interval(1.0, 0.9, 1.2), "mlp": Interval(2.0, 1.5, 2.5)}
    c = compose("m", counts, t, t, prompt_length=10, decode_context=10, decode_batch=1)
    assert c.prefill_s == Interval(4.0, 3.3, 4.9)
    tps = c.prefill_tokens_per_s
    assert (tps.value, tps.low, tps.high) == pytest.approx((10 / 4.0, 10 / 4.9, 10 / 3.3))
    r = ratio(Interval(4.0, 3.0, 5.0), Interval(2.0, 1.0, 2.5))
    assert (r.value, r.low, r.high) == pytest.approx((2.0, 1.2, 5.0))


def test_a_layer_type_without_a_timing_is_an_error() -> None:
    with pytest.raises(ServingError, match=r"decode timing for layer type.*kda"):
        compose("m", {"kda": 3, "mlp": 1}, {"kda": 1.0, "mlp": 1.0}, {"mlp": 1.0},
                prompt_length=4, decode_context=4, decode_batch=1)
    with pytest.raises(ServingError, match="positive finite"):
        compose("m", {"mlp": 1}, {"mlp": 0.0}, {"mlp": 1.0}, prompt_length=4,
                decode_context=4, decode_batch=1)
    with pytest.raises(ServingError, match="low <= value"):
        compose("m", {"mlp": 1}, {"mlp": Interval(1.0, 2.0, 3.0)}, {"mlp": 1.0},
                prompt_length=4, decode_context=4, decode_batch=1)


def test_a_faster_layer_moves_the_ratio_the_right_way() -> None:
    counts = {"mamba1": 1, "mlp": 1}
    base = compose("b", {"attention": 1, "mlp": 1}, {"attention": 3.0, "mlp": 1.0},
                   {"attention": 3.0, "mlp": 1.0}, prompt_length=8, decode_context=8,
                   decode_batch=1)
    model = compose("m", counts, {"mamba1": 1.0, "mlp": 1.0}, {"mamba1": 1.0, "mlp": 1.0},
                    prompt_length=8, decode_context=8, decode_batch=1)
    assert reading("r", "prefill", model, base).ratio.value == pytest.approx(4.0 / 2.0)
    assert reading("r", "decode", model, base).ratio.value == pytest.approx(2.0)


def test_memory_limited_batch_reading_differs_from_equal_batch(kb: KnowledgeBase) -> None:
    hw = hardware_values(HardwareModel(kb), "h200-sxm", "bf16")
    kimi, mla = kb.architectures["kimi-linear-48b-a3b"], kb.architectures[
        "kimi-mla-48b-a3b-baseline"]
    context = 1_048_576
    b_kimi = memory_limited_batch(kimi, context, "h200-sxm", hw, cap=64)
    b_mla = memory_limited_batch(mla, context, "h200-sxm", hw, cap=64)
    # the smaller cache admits the larger batch (the premise of the memory-limited reading)
    assert b_kimi > b_mla >= 1
    # fake per-layer times: decode time grows with the batch the same way on both sides
    def step(batch: int) -> dict[str, float]:
        return {"kda": 1e-4 * batch, "mla": 4e-4 * batch, "mlp": 1e-4, "moe": 2e-4}
    counts_k, counts_m = layer_counts(kimi), layer_counts(mla)
    eq_k = compose(kimi.id, counts_k, step(1), step(1), prompt_length=context,
                   decode_context=context, decode_batch=1)
    eq_m = compose(mla.id, counts_m, step(1), step(1), prompt_length=context,
                   decode_context=context, decode_batch=1)
    ml_k = compose(kimi.id, counts_k, step(1), step(b_kimi), prompt_length=context,
                   decode_context=context, decode_batch=b_kimi)
    ml_m = compose(mla.id, counts_m, step(1), step(b_mla), prompt_length=context,
                   decode_context=context, decode_batch=b_mla)
    equal = reading("equal_batch", "decode", eq_k, eq_m)
    limited = reading("memory_limited", "decode", ml_k, ml_m)
    # equal batch: 1 / (20*1e-4 + 7*4e-4 + 1e-4 + 26*2e-4) vs 1 / (27*4e-4 + 1e-4 + 26*2e-4)
    t_k, t_m = 20e-4 + 28e-4 + 1e-4 + 52e-4, 108e-4 + 1e-4 + 52e-4
    assert equal.ratio.value == pytest.approx(t_m / t_k)
    assert limited.ratio.value > equal.ratio.value
    assert "batch 1" in equal.what and f"batch {b_kimi} vs {b_mla}" in limited.what


def test_memory_limited_batch_refuses_a_model_that_does_not_fit(kb: KnowledgeBase) -> None:
    hw = hardware_values(HardwareModel(kb), "rtx-4090", "bf16")
    with pytest.raises(ServingError, match=r"does not fit|weights alone"):
        memory_limited_batch(kb.architectures["llama-3-1-70b"], 4096, "rtx-4090", hw, cap=8)
