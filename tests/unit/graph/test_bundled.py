"""Graph invariants on the bundled KB (whatever records it holds today)."""

from __future__ import annotations

from functools import cache

from flopkb.graph import KBGraph, affects, diff, status
from flopkb.kb import load_kb
from flopkb.paths import bundled_root


@cache
def bundled() -> KBGraph:
    kb, _ = load_kb(bundled_root())
    return KBGraph.from_kb(kb)


def test_no_reference_dangles() -> None:
    assert bundled().g.graph["dangling"] == []


def test_every_claim_has_one_class_and_depends_on_a_quantity() -> None:
    kg = bundled()
    for node, data in kg.g.nodes(data=True):
        if data["kind"] == "claim":
            assert [c for c, _ in kg.in_by(node, "has")] == [f"class:{data['record']}"]
            assert kg.out_by(node, "depends_on")


def test_what_depends_on_a_computed_quantity_depends_on_each_of_its_inputs() -> None:
    kg = bundled()
    computed = [d["label"] for _, d in kg.g.nodes(data=True) if d.get("computed")]
    assert {"ridge_point_bf16", "tensor_to_simt_ratio", "int8_to_bf16_ratio"} <= set(computed)
    for q in computed:
        above = set(affects(kg, q)["claims"])
        for name in kg.inputs(q) - {q}:
            assert above <= set(affects(kg, name)["claims"]), (q, name)


def test_h100_to_h200_moves_bandwidth_and_memory() -> None:
    result = diff(bundled(), "h100-sxm", "h200-sxm")
    ratios = {q["quantity"]: q["ratio"] for q in result["quantities"] if q["differs"]}
    assert round(ratios["hbm_bandwidth"], 2) == 1.43
    assert round(ratios["memory_capacity"], 2) == 1.76
    assert round(ratios["ridge_point_bf16"], 2) == 0.70
    hbm = next(q for q in result["quantities"] if q["quantity"] == "hbm_bandwidth")
    assert set(hbm["claims"]) == set(affects(bundled(), "hbm_bandwidth")["claims"])


def test_int4_claims_are_not_applicable_on_hopper() -> None:
    na = {row["claim"]: row["accelerators"] for row in status(bundled())["not_applicable"]}
    hopper = {"h100-sxm", "h200-sxm"}
    int4 = [c for c in na if "int4" in c]
    assert int4 and all(hopper & set(na[c]) for c in int4)


def test_a_source_reaches_only_claims_on_the_specs_it_backs() -> None:
    # The Hopper whitepaper backs the SM count (and the absent INT4 path), never a bf16 rate or
    # the bandwidth: claims that move only with those must not be reached through it.
    kg = bundled()
    backed = {
        q for acc, d in kg.in_by("source:nvidia-hopper-whitepaper", "cites")
        if acc.startswith("accelerator:") for q in d["quantities"]
    }  # fmt: skip
    assert "bf16_tensor_flops" not in backed and "hbm_bandwidth" not in backed
    reached = set(affects(kg, "nvidia-hopper-whitepaper")["claims"])
    bf16_only = {
        kg.g.nodes[c]["label"] for c in kg.in_by("quantity:bf16_tensor_flops", "depends_on")
        for c in [c[0]] if len(kg.out_by(c, "depends_on")) == 1
    }  # fmt: skip
    assert bf16_only and not (bf16_only & reached)


def test_status_names_the_rows_verify_does_not_judge_by_design_and_why() -> None:
    result = status(bundled())
    why = {row["claim"]: row["reason"] for row in result["not_verifiable"]}
    assert why["mamba2-ssd/training-compute-vs-transformer"].startswith("not applicable: ")
    assert why["flash-attention-2/non-matmul-flop-cost"].startswith("judged on a100")


def test_status_names_the_evidence_whose_flag_makes_a_claim_implementation_sensitive() -> None:
    kg = bundled()
    for row in status(kg)["implementation_sensitive"]:
        assert row["evidence"]
        for eid in row["evidence"]:
            ev = kg.kb.evidence[eid]
            assert ev.implementation_sensitive and len(ev.judgements) > 1, eid
