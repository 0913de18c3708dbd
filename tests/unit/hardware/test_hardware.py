"""Computed hardware parameters equal hand calculations from the cited datasheet specs."""

from __future__ import annotations

import pytest

from flopkb.hardware.model import HardwareModel, UnknownRecord
from flopkb.hardware.show import hw_compare, hw_show
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.paths import bundled_root


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    loaded, _ = load_kb(bundled_root())
    return loaded


def test_hw_show_has_the_design_shape(kb: KnowledgeBase) -> None:
    data = hw_show(kb, "h200-sxm")
    assert {"id", "specs", "computed"} <= set(data)
    assert data["id"] == "h200-sxm"
    for spec in data["specs"].values():
        assert {"value", "unit", "source"} <= set(spec)
    for computed in data["computed"].values():
        assert {"value", "unit", "formula"} <= set(computed)


def test_ridge_point_of_h200_is_bf16_rate_over_bandwidth(kb: KnowledgeBase) -> None:
    # H200 datasheet: 1,979 TFLOP/s BF16 with sparsity (989.5 dense), 4.8 TB/s HBM3e
    computed = hw_show(kb, "h200-sxm")["computed"]
    assert computed["ridge_point_bf16"]["value"] == pytest.approx(989.5 / 4.8, rel=1e-5)
    assert computed["ridge_point_bf16"]["unit"] == "FLOP/B"


@pytest.mark.parametrize(
    ("acc", "quantity", "expected"),
    [
        ("h100-sxm", "tensor_to_simt_ratio", 989.5 / 67),
        ("h100-sxm", "ridge_point_bf16", 989.5 / 3.35),
        ("a100-sxm4-80gb", "tensor_to_simt_ratio", 312 / 19.5),
        ("a100-pcie-80gb", "ridge_point_bf16", 312 / 1.935),
        ("rtx-4090", "tensor_to_simt_ratio", 165.2 / 82.6),
        ("rtx-4090", "int8_to_bf16_ratio", 660.6 / 165.2),
        ("rtx-3090", "ridge_point_fp32_simt", 35.6 / 0.936),
        ("l40s", "ridge_point_bf16", 362.05 / 0.864),
        ("h200-sxm", "hbm_bandwidth_per_sm", 4.8 * 1000 / 132),
    ],
)
def test_computed_values_equal_hand_calculations(
    kb: KnowledgeBase, acc: str, quantity: str, expected: float
) -> None:
    assert hw_show(kb, acc)["computed"][quantity]["value"] == pytest.approx(expected, rel=1e-5)


def test_null_input_makes_a_computed_value_not_applicable_with_the_note() -> None:
    loaded, _ = load_kb(bundled_root())
    model = HardwareModel(loaded)
    int4 = model.value(loaded.accelerators["h100-sxm"], "int4_tensor_ops")
    assert int4.value is None
    assert "INT4" in (int4.note or "")
    derived = model.evaluate_text(
        loaded.accelerators["h100-sxm"], "int4_tensor_ops / int8_tensor_ops"
    )
    assert derived.value is None
    assert derived.note is not None and derived.note.startswith("not applicable")
    assert (
        model.evaluate_text(
            loaded.accelerators["a100-sxm4-80gb"], "int4_tensor_ops / int8_tensor_ops"
        ).value
        == 2
    )


def test_compare_h100_h200_names_what_differs_and_the_claims_through_formulas(
    kb: KnowledgeBase,
) -> None:
    data = hw_compare(kb, "h100-sxm", "h200-sxm")
    assert set(data["differs"]) == {
        "hbm_bandwidth",
        "memory_capacity",
        # 60 MiB on the H200 (as the device reports it) against the H100's 50 MB
        "l2_cache_size",
        "ridge_point_bf16",
        "ridge_point_fp32_simt",
        "hbm_bandwidth_per_sm",
    }
    rows = {r["quantity"]: r for r in data["quantities"]}
    assert rows["hbm_bandwidth"]["ratio"] == pytest.approx(4.8 / 3.35, rel=1e-5)
    assert rows["bf16_tensor_flops"]["differs"] is False
    claims = {c["claim"]: c for c in data["claims"]}
    # directly on a differing quantity
    assert "jamba/kv-cache-reduction" in claims
    # through a computed quantity's formula: ridge_point_fp32_simt <- hbm_bandwidth
    assert "hbm_bandwidth" in claims["gpu-reduction/gpu-to-gpu-overhead"]["via"]
    # a claim on tensor_to_simt_ratio does not move between these two parts
    assert "nemotron-h/hybrid-beats-pure-ssm" not in claims


def test_compare_counts_a_null_against_a_value_as_a_difference(kb: KnowledgeBase) -> None:
    data = hw_compare(kb, "h100-sxm", "a100-sxm4-80gb")
    assert "int4_tensor_ops" in data["differs"]
    assert "int8-gemm/int4-native-beats-emulated" in {c["claim"] for c in data["claims"]}


def test_unknown_accelerator_suggests_close_ids(kb: KnowledgeBase) -> None:
    with pytest.raises(UnknownRecord, match="h100-sxm"):
        hw_show(kb, "h100-sxn")
