"""Every graph query on the fixture KB, with exact expected answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopkb.findings import Severity
from flopkb.graph import (
    GraphQueryError,
    KBGraph,
    UnknownIdError,
    affects,
    diff,
    path,
    status,
    what_if,
    why,
)
from flopkb.graph.queries import latest_verdicts, parse_settings
from flopkb.kb import load_kb
from tests.unit.graph.graph_fixture import GRAPH_KB, fixture_graph


def test_affects_a_quantity_reaches_claims_through_computed_quantities() -> None:
    result = affects(fixture_graph(), "hbm_bandwidth")
    assert result["id"] == "hbm_bandwidth" and result["kind"] == "quantity"
    assert result["classes"] == ["int4-op", "memory-model", "scan-op"]
    assert result["quantities"] == ["int4_ridge_per_simt", "int4_ridge_point", "ridge_point_bf16"]
    assert result["paths"]["scan-op/ridge-claim"] == [
        {
            "source": "claim:scan-op/ridge-claim",
            "relation": "depends_on",
            "target": "quantity:ridge_point_bf16",
        },
        {
            "source": "quantity:ridge_point_bf16",
            "relation": "derived_from",
            "target": "quantity:hbm_bandwidth",
        },
    ]


def test_whatever_depends_on_a_computed_quantity_depends_on_its_inputs() -> None:
    kg = fixture_graph()
    for computed, inputs in (
        ("ridge_point_bf16", ["hbm_bandwidth", "bf16_tensor_flops"]),
        ("int4_ridge_per_simt", ["int4_tensor_ops", "fp32_simt_flops"]),
    ):
        below = set(affects(kg, computed)["claims"])
        for name in inputs:
            assert below <= set(affects(kg, name)["claims"])


# The claims each id moves: (id, through the accelerator's specs too, the claims).
AFFECTED_CLAIMS = [
    (
        "hbm_bandwidth",
        True,
        ["int4-op/bw-claim", "memory-model/ratio-claim", "scan-op/ridge-claim"],
    ),
    ("bf16_tensor_flops", True, ["scan-op/ridge-claim", "scan-op/simt-claim"]),
    ("ridge_point_bf16", True, ["scan-op/ridge-claim"]),
    ("memory_capacity", True, ["memory-model/cap-claim", "memory-model/ratio-claim"]),
    (
        "h100-sxm",
        False,
        ["int4-op/bw-claim", "int4-op/int4-claim", "scan-op/ridge-claim", "scan-op/simt-claim"],
    ),
    # Through its specs the part also moves memory-model's claims (memory_capacity, hbm_bandwidth).
    (
        "h100-sxm",
        True,
        [
            "int4-op/bw-claim",
            "int4-op/int4-claim",
            "memory-model/cap-claim",
            "memory-model/ratio-claim",
            "scan-op/ridge-claim",
            "scan-op/simt-claim",
        ],
    ),
    ("src-paper", True, ["memory-model/cap-claim", "scan-op/ridge-claim"]),
    ("src-class", True, ["scan-op/ridge-claim", "scan-op/simt-claim"]),
    ("src-orphan", True, []),
    # The datasheet backs hbm_bandwidth on every part and bf16_tensor_flops on h100-sxm only:
    # scan-op runs on h100-sxm, so its tensor_to_simt_ratio claim moves with the datasheet too.
    (
        "src-datasheet",
        True,
        [
            "int4-op/bw-claim",
            "memory-model/ratio-claim",
            "scan-op/ridge-claim",
            "scan-op/simt-claim",
        ],
    ),
]


@pytest.mark.parametrize(
    ("ident", "via_specs", "claims"),
    AFFECTED_CLAIMS,
    ids=[ident if via_specs else f"{ident}-direct" for ident, via_specs, _ in AFFECTED_CLAIMS],
)
def test_affects_lists_the_claims_an_id_moves(
    ident: str, via_specs: bool, claims: list[str]
) -> None:
    assert affects(fixture_graph(), ident, via_specs=via_specs)["claims"] == claims


def test_affects_nothing_for_an_unused_quantity() -> None:
    nothing = affects(fixture_graph(), "l2_cache_size")
    assert nothing["claims"] == nothing["classes"] == nothing["quantities"] == []


def test_affects_an_accelerator() -> None:
    kg = fixture_graph()
    direct = affects(kg, "h100-sxm", via_specs=False)
    assert direct["classes"] == ["int4-op", "scan-op"]
    assert direct["paths"]["int4-op/int4-claim"] == [
        {"source": "class:int4-op", "relation": "has", "target": "claim:int4-op/int4-claim"},
        {"source": "class:int4-op", "relation": "affected_by", "target": "accelerator:h100-sxm"},
    ]
    full = affects(kg, "h100-sxm")
    assert full["classes"] == ["int4-op", "memory-model", "scan-op"]
    assert full["paths"]["memory-model/cap-claim"][-1] == {
        "source": "accelerator:h100-sxm",
        "relation": "specifies",
        "target": "quantity:memory_capacity",
    }


def test_affects_a_source() -> None:
    sheet = affects(fixture_graph(), "src-datasheet")
    assert sheet["quantities"] == [
        "int4_ridge_per_simt",
        "int4_ridge_point",
        "ridge_point_bf16",
        "tensor_to_simt_ratio",
    ]
    assert sheet["paths"]["memory-model/ratio-claim"] == [
        {
            "source": "claim:memory-model/ratio-claim",
            "relation": "depends_on",
            "target": "quantity:hbm_bandwidth",
        },
        {
            "source": "accelerator:h200-sxm",
            "relation": "specifies",
            "target": "quantity:hbm_bandwidth",
        },
        {"source": "accelerator:h200-sxm", "relation": "cites", "target": "source:src-datasheet"},
    ]


def test_ids_resolve_bare_or_prefixed_and_unknown_ids_suggest() -> None:
    kg = fixture_graph()
    assert affects(kg, "quantity:hbm_bandwidth")["claims"] == affects(kg, "hbm_bandwidth")["claims"]
    with pytest.raises(UnknownIdError) as err:
        affects(kg, "hbm_bandwith")
    assert err.value.suggestions == ["hbm_bandwidth"]
    assert "did you mean hbm_bandwidth?" in str(err.value)
    with pytest.raises(GraphQueryError, match="'scan-op' is a class"):
        affects(kg, "scan-op")
    with pytest.raises(UnknownIdError):
        why(kg, "scan-op/no-such-row")


def test_why_lists_quantities_values_and_claims() -> None:
    result = why(fixture_graph(), "scan-op", on="h200-sxm")
    assert (result["class"], result["on"], result["affected"]) == ("scan-op", "h200-sxm", True)
    assert [q["id"] for q in result["quantities"]] == [
        "ridge_point_bf16",
        "tensor_to_simt_ratio",
        "bf16_tensor_flops",
        "hbm_bandwidth",
        "fp32_simt_flops",
    ]
    ridge = result["quantities"][0]
    assert ridge["inputs"] == ["bf16_tensor_flops", "hbm_bandwidth"]
    assert ridge["claims"] == ["scan-op/ridge-claim"]
    assert ridge["values"]["h200-sxm"]["status"] == "computed"
    assert ridge["values"]["h200-sxm"]["value"] == pytest.approx(989.4e12 / 4.8e12)
    assert [(c["claim"], c["magnitude"], c["basis"]) for c in result["claims"]] == [
        ("scan-op/ridge-claim", "2-8x", "cited"),
        ("scan-op/simt-claim", "qualitative", "unverified"),
    ]


def test_why_without_on_covers_every_affected_part_and_shows_verdicts() -> None:
    result = why(fixture_graph(), "int4-op")
    assert result["on"] is None and result["accelerators"] == ["a100-sxm4-80gb", "h100-sxm"]
    claims = {c["claim"]: c for c in result["claims"]}
    # h100-sxm's two runs disagree (refuted, then confirmed): a status of its own, not the latest
    assert claims["int4-op/bw-claim"]["verdicts"] == {
        "a100-sxm4-80gb": "refuted",
        "h100-sxm": "disagreeing",
    }
    assert claims["int4-op/int4-claim"]["not_applicable_on"] == ["h100-sxm"]
    int4 = next(q for q in result["quantities"] if q["id"] == "int4_tensor_ops")
    assert int4["values"]["h100-sxm"] == {
        "value": None,
        "status": "null",
        "unit": "OP/s",
        "note": "no int4 tensor-core path",
    }


def test_why_on_a_part_the_class_does_not_list() -> None:
    assert why(fixture_graph(), "memory-model", on="h100-sxm")["affected"] is False


def test_latest_verdict_wins_per_accelerator() -> None:
    verdicts = latest_verdicts(fixture_graph(), "claim:int4-op/bw-claim")
    assert {a: v["evidence"] for a, v in verdicts.items()} == {
        "a100-sxm4-80gb": "ev-bw-a100",
        "h100-sxm": "ev-bw-h100-new",
    }


def test_diff_h100_to_h200() -> None:
    result = diff(fixture_graph(), "h100-sxm", "h200-sxm")
    changed = {q["quantity"]: q for q in result["quantities"] if q["differs"]}
    assert set(changed) == {"hbm_bandwidth", "memory_capacity", "ridge_point_bf16"}
    assert changed["hbm_bandwidth"]["ratio"] == pytest.approx(1.43, abs=0.005)
    assert changed["memory_capacity"]["ratio"] == pytest.approx(1.76, abs=0.005)
    assert changed["ridge_point_bf16"]["ratio"] == pytest.approx(0.70, abs=0.005)
    assert changed["ridge_point_bf16"]["claims"] == ["scan-op/ridge-claim"]
    assert changed["memory_capacity"]["claims"] == [
        "memory-model/cap-claim",
        "memory-model/ratio-claim",
    ]
    # The graph's per-quantity claims and flopkb.hardware's claim list agree.
    from_graph = {c for q in changed.values() for c in q["claims"]}
    assert from_graph == {c["claim"] for c in result["claims"]}
    assert result["classes"] == ["int4-op", "memory-model", "scan-op"]


def test_what_if_recomputes_and_lists_what_moves() -> None:
    result = what_if(fixture_graph(), "h100-sxm", {"hbm_bandwidth": 6.7e12})
    assert result["set"] == {"hbm_bandwidth": 6.7e12}
    moved = {q["id"]: q["ratio"] for q in result["quantities"]}
    assert moved == {"hbm_bandwidth": pytest.approx(2.0), "ridge_point_bf16": pytest.approx(0.5)}
    claims = {c["claim"]: c for c in result["claims"]}
    assert set(claims) == {"int4-op/bw-claim", "memory-model/ratio-claim", "scan-op/ridge-claim"}
    # a derived row moves as its formula does: memory_capacity / hbm_bandwidth halves
    assert claims["memory-model/ratio-claim"]["ratio"] == pytest.approx(0.5)
    assert claims["memory-model/ratio-claim"]["affected"] is False
    assert claims["scan-op/ridge-claim"]["via"] == ["ridge_point_bf16"]


def test_what_if_a_missing_feature_becomes_applicable() -> None:
    result = what_if(fixture_graph(), "h100-sxm", {"int4_tensor_ops": 1e15})
    moved = {q["id"]: (q["before_status"], q["after_status"]) for q in result["quantities"]}
    assert moved == {
        "int4_tensor_ops": ("null", "override"),
        "int4_ridge_point": ("null", "computed"),
        "int4_ridge_per_simt": ("null", "computed"),
    }
    assert [c["claim"] for c in result["claims"]] == ["int4-op/int4-claim"]


def test_what_if_refuses_computed_quantities_and_bad_settings() -> None:
    kg = fixture_graph()
    with pytest.raises(GraphQueryError, match="ridge_point_bf16 is computed"):
        what_if(kg, "h100-sxm", {"ridge_point_bf16": 1.0})
    with pytest.raises(GraphQueryError, match="expected QUANTITY=NUMBER"):
        parse_settings(["hbm_bandwidth"])
    with pytest.raises(GraphQueryError, match="expected QUANTITY=NUMBER"):
        parse_settings(["hbm_bandwidth=fast"])
    assert parse_settings(["hbm_bandwidth=4.8e12", "sm_count = 132"]) == {
        "hbm_bandwidth": 4.8e12,
        "sm_count": 132.0,
    }


def test_path_is_shortest_and_keeps_edge_directions() -> None:
    result = path(fixture_graph(), "src-class", "hbm_bandwidth")
    assert result["nodes"] == [
        "source:src-class",
        "claim:scan-op/ridge-claim",
        "quantity:ridge_point_bf16",
        "quantity:hbm_bandwidth",
    ]
    assert [e["relation"] for e in result["edges"]] == ["cites", "depends_on", "derived_from"]
    assert result["edges"][0]["source"] == "claim:scan-op/ridge-claim"
    assert result["length"] == 3
    none = path(fixture_graph(), "src-orphan", "h100-sxm")
    assert none["nodes"] is None and none["length"] is None


def test_status() -> None:
    result = status(fixture_graph())
    assert [u["claim"] for u in result["unverified"]] == ["scan-op/simt-claim"]
    assert result["contradicted"] == [
        {
            "claim": "int4-op/bw-claim",
            "accelerators": ["a100-sxm4-80gb"],
            "evidence": ["ev-bw-a100"],
        },
    ]
    assert result["not_applicable"] == [
        {"claim": "int4-op/int4-claim", "accelerators": ["h100-sxm"]},
    ]
    # The bw evidence names a real experiment with made-up kernel hashes: stale, except the old
    # h100 record, which the newer one supersedes (history, not stale). The int4 evidence names
    # no known experiment, so the verify package cannot call it stale.
    assert [(s["claim"], [e["evidence"] for e in s["evidence"]]) for s in result["stale"]] == [
        ("int4-op/bw-claim", ["ev-bw-a100", "ev-bw-h100-new"]),
    ]


def test_affects_a_source_follows_only_the_specs_it_backs(tmp_path: Path) -> None:
    # h100-sxm lists src-datasheet for the whole record, yet its bf16 figure names src-paper:
    # the datasheet then backs bandwidth (its own locator) and the unsourced specs, not bf16.
    root = tmp_path / "kb"
    shutil.copytree(GRAPH_KB, root)
    h100 = root / "records" / "accelerators" / "h100-sxm.yaml"
    text = h100.read_text().replace(
        '{value: 989.4e+12, unit: "FLOP/s", source: {id: src-datasheet, locator: "Table 2"}}',
        '{value: 989.4e+12, unit: "FLOP/s", source: {id: src-paper, locator: "Table 9"}}',
    )
    h100.write_text(text + 'sources: [{id: src-datasheet, locator: "all of it"}]\n')
    (root / "records" / "classes" / "gemm-op.yaml").write_text(
        "schema_version: 2\nid: gemm-op\nkind: operator\ntitle: A GEMM\n"
        "prose: |\n  The GEMM runs at the tensor-core rate.\n"
        "affected_by_hardware: [h100-sxm]\n"
        "flop:\n  hardware_parameters:\n"
        "    - {id: bf16-claim, quantity: bf16_tensor_flops, basis: unverified,\n"
        "       effect: The GEMM runs at the tensor-core rate., magnitude: qualitative}\n"
        "history: [{date: 2026-11-30, by: graph-test, note: a bf16-only claim}]\n"
    )
    kb, findings = load_kb(root)
    assert not [f for f in findings if f.severity == Severity.error], findings
    kg = KBGraph.from_kb(kb)
    backs = kg.g.edges["accelerator:h100-sxm", "source:src-datasheet"]["quantities"]
    assert backs == ["fp32_simt_flops", "hbm_bandwidth", "int4_tensor_ops", "memory_capacity"]
    assert "gemm-op/bf16-claim" not in affects(kg, "src-datasheet")["claims"]
    assert "gemm-op/bf16-claim" in affects(kg, "src-paper")["claims"]
    # the unsourced fp32 spec is the datasheet's, so tensor_to_simt_ratio still moves with it
    assert "scan-op/simt-claim" in affects(kg, "src-datasheet")["claims"]
