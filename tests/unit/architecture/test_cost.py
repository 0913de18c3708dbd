"""Computed model parameters against hand calculations from the architecture records."""

from __future__ import annotations

import pytest

from flopkb.architecture.cost import ArchitectureError, compute, roofline
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import ArchitectureRecord
from flopkb.paths import bundled_root

GIB = 2**30


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def arch(kb: KnowledgeBase, aid: str) -> ArchitectureRecord:
    return kb.architectures[aid]


def test_jamba_kv_cache_at_256k_is_4_gib(kb: KnowledgeBase) -> None:
    # 4 attention layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes x 262,144 tokens
    expected = 4 * 8 * 128 * 2 * 2 * 262_144
    costs = compute(arch(kb, "jamba-1-5-mini"), context=262_144)
    assert costs.kv_cache_bytes == expected == 4 * GIB


def test_mixtral_kv_cache_at_256k_is_32_gib(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "mixtral-8x7b"), context=262_144)
    assert costs.kv_cache_bytes == 32 * 8 * 128 * 2 * 2 * 262_144 == 32 * GIB


def test_kv_cache_scales_with_batch_and_dtype(kb: KnowledgeBase) -> None:
    one = compute(arch(kb, "jamba-1-5-mini"), context=1024)
    four = compute(arch(kb, "jamba-1-5-mini"), context=1024, batch=4, dtype="fp32")
    assert four.kv_cache_bytes == 8 * one.kv_cache_bytes


def test_llama_3_1_8b_parameter_count(kb: KnowledgeBase) -> None:
    # per layer: Q and O 2 x 4096^2, K and V 2 x 4096 x 1024, MLP 3 x 4096 x 14336, 2 norms;
    # embeddings and the untied head 2 x 128256 x 4096, the final norm
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    expected = 32 * layer + 2 * 128_256 * 4096 + 4096
    costs = compute(arch(kb, "llama-3-1-8b"))
    assert costs.parameters == expected
    assert costs.parameters == pytest.approx(8.03e9, rel=1e-3)


def test_nemotron_h_8b_attention_share_is_4_of_52(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "nemotron-h-8b"))
    assert costs.layers == 52
    assert costs.counts == {"attention": 4, "mamba2": 24, "mlp": 24}
    assert costs.attention_share == pytest.approx(100 * 4 / 52)


def test_layer_width_counts_mixer_and_mlp_as_one_layer(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "jamba-1-5-mini"))
    assert costs.layers == 32
    assert costs.counts == {"attention": 4, "mamba1": 28, "mlp": 16, "moe": 16}
    assert costs.attention_share == 12.5


def test_mla_cache_is_the_latent_only(kb: KnowledgeBase) -> None:
    # 7 MLA layers x (kv_lora_rank 512 + rope 64) x 2 bytes per token
    costs = compute(arch(kb, "kimi-linear-48b-a3b"), context=1000)
    assert costs.kv_cache_bytes == 7 * (512 + 64) * 2 * 1000
    assert costs.linear_to_attention == pytest.approx(20 / 7)


def test_sliding_window_caps_the_cache(kb: KnowledgeBase) -> None:
    samba = arch(kb, "samba-1-7b")
    at_window = compute(samba, context=2048)
    far = compute(samba, context=131_072)
    assert far.kv_cache_bytes == at_window.kv_cache_bytes == 12 * 4 * 64 * 2 * 2 * 2048
    assert far.prefill_flops_per_token > at_window.prefill_flops_per_token


def test_mamba2_state_from_heads_and_groups(kb: KnowledgeBase) -> None:
    # 24 layers x (128 heads x 64 x 128 state + conv (8192 + 2 x 8 x 128) x 3) x 2 bytes
    costs = compute(arch(kb, "nemotron-h-8b"))
    assert costs.state_bytes == 24 * (128 * 64 * 128 + (8192 + 2 * 8 * 128) * 3) * 2


def test_moe_active_parameters_are_top_k(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "mixtral-8x7b"))
    expert = 3 * 4096 * 14336
    assert costs.parameters - costs.active_parameters == 32 * 6 * expert


def test_roofline_decode_is_bandwidth_bound_at_batch_1(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "llama-3-1-8b"), context=4096)
    hw = {"bf16_tensor_flops": 989.5, "hbm_bandwidth": 4.8, "memory_capacity": 141.0}
    r = roofline(costs, "h200-sxm", hw)
    assert r.bound["decode"] == "memory"
    assert r.decode_tokens_per_s == pytest.approx(4.8e12 / costs.decode_bytes_per_step)
    per_seq = costs.kv_cache_bytes + costs.state_bytes
    assert r.max_batch == int((141e9 - costs.weight_bytes) // per_seq)
    doubled = roofline(costs, "h200-sxm", {**hw, "hbm_bandwidth": 9.6})
    assert doubled.decode_tokens_per_s == pytest.approx(2 * r.decode_tokens_per_s)
    assert doubled.prefill_tokens_per_s == r.prefill_tokens_per_s


def test_missing_input_is_a_note_not_a_number(kb: KnowledgeBase) -> None:
    costs = compute(arch(kb, "llama-3-1-8b"))
    r = roofline(costs, "x", {"bf16_tensor_flops": 989.5, "hbm_bandwidth": None})
    assert r.decode_tokens_per_s is None and r.note and "hbm_bandwidth" in r.note


def test_a_missing_size_is_an_error_naming_it(kb: KnowledgeBase) -> None:
    nemotron = arch(kb, "nemotron-h-8b")
    broken = nemotron.model_copy(
        update={"config": nemotron.config.model_copy(update={"ssm_heads": None})}
    )
    with pytest.raises(ArchitectureError, match="ssm_heads"):
        compute(broken)


def test_a_huge_pattern_is_refused_at_load() -> None:
    legend = {"*": "attention", "-": "mlp"}
    data = {
        "schema_version": 3, "id": "x", "kind": "architecture", "title": "x",
        "history": [{"date": "2026-12-01", "by": "t", "note": "n"}],
        "layers": {"pattern": "*-" * 2048, "repeat": 1024, "legend": legend},
        "config": {},
    }  # fmt: skip
    with pytest.raises(ValueError, match="at most 65536"):
        ArchitectureRecord.model_validate(data)


def test_counts_give_the_same_costs_as_the_pattern(kb: KnowledgeBase) -> None:
    # a record may give sublayer counts where the published order is unknown
    nemotron = arch(kb, "nemotron-h-56b")
    data = nemotron.model_dump(mode="json", exclude_none=True)
    data["layers"] = {"counts": {"mamba2": 54, "attention": 10, "mlp": 54}}
    counted = ArchitectureRecord.model_validate(data)
    a, b = compute(nemotron, context=8192), compute(counted, context=8192)
    assert b.layers == a.layers == 118
    assert (b.parameters, b.kv_cache_bytes, b.attention_share) == (
        a.parameters, a.kv_cache_bytes, a.attention_share,
    )  # fmt: skip


def test_nemotron_h_8b_parameter_count(kb: KnowledgeBase) -> None:
    # Mamba-2 layer: in_proj 4096 x (2 x 8192 + 2 x 8 x 128 + 128), conv (8192 + 2048) x (4 + 1),
    # A, D, dt bias 3 x 128, gated norm 8192, out_proj 8192 x 4096, its RMSNorm 4096
    mamba = 4096 * (2 * 8192 + 2048 + 128) + 10240 * 5 + 3 * 128 + 8192 + 8192 * 4096 + 4096
    attention = 2 * 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 4096
    mlp = 2 * 4096 * 21504 + 4096  # squared ReLU: up and down, no gate
    embeddings = 2 * 131072 * 4096 + 4096  # untied head, final norm
    expected = 24 * mamba + 4 * attention + 24 * mlp + embeddings
    assert compute(arch(kb, "nemotron-h-8b")).parameters == expected
