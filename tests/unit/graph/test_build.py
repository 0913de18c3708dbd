"""The graph has exactly the nodes and edges docs/graph.md lists, on the fixture KB."""

from __future__ import annotations

import pytest

from flopkb.graph import build_graph, node_id, split_node
from flopkb.graph.build import EVIDENCE_RELATIONS
from flopkb.kb import KnowledgeBase
from tests.unit.graph.graph_fixture import fixture_graph


def edges(relation: str) -> set[tuple[str, str]]:
    g = fixture_graph().g
    return {(u, v) for u, v, r in g.edges(data="relation") if r == relation}


def test_nodes_are_prefixed_by_kind_and_carry_kind_label_record() -> None:
    g = fixture_graph().g
    kinds: dict[str, int] = {}
    for n, d in g.nodes(data=True):
        kind, ident = split_node(n)
        assert d["kind"] == kind and d["label"] == ident
        kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds == {
        "quantity": 10,
        "accelerator": 3,
        "source": 4,
        "class": 3,
        "claim": 6,
        "evidence": 4,
    }
    assert g.nodes["claim:scan-op/ridge-claim"]["record"] == "scan-op"
    assert g.nodes["quantity:ridge_point_bf16"]["computed"] is True


# Every edge of a relation, exactly: one case per relation, so one wrong set hides no other.
EDGES: dict[str, set[tuple[str, str]]] = {
    "has": {
        ("class:scan-op", "claim:scan-op/ridge-claim"),
        ("class:scan-op", "claim:scan-op/simt-claim"),
        ("class:int4-op", "claim:int4-op/int4-claim"),
        ("class:int4-op", "claim:int4-op/bw-claim"),
        ("class:memory-model", "claim:memory-model/cap-claim"),
        ("class:memory-model", "claim:memory-model/ratio-claim"),
    },
    "depends_on": {
        ("claim:scan-op/ridge-claim", "quantity:ridge_point_bf16"),
        ("claim:scan-op/simt-claim", "quantity:tensor_to_simt_ratio"),
        ("claim:int4-op/int4-claim", "quantity:int4_tensor_ops"),
        ("claim:int4-op/bw-claim", "quantity:hbm_bandwidth"),
        ("claim:memory-model/cap-claim", "quantity:memory_capacity"),
        ("claim:memory-model/ratio-claim", "quantity:memory_capacity"),
        # a derived row's formula inputs count as dependencies too
        ("claim:memory-model/ratio-claim", "quantity:hbm_bandwidth"),
    },
    "derived_from": {
        ("quantity:ridge_point_bf16", "quantity:bf16_tensor_flops"),
        ("quantity:ridge_point_bf16", "quantity:hbm_bandwidth"),
        ("quantity:tensor_to_simt_ratio", "quantity:bf16_tensor_flops"),
        ("quantity:tensor_to_simt_ratio", "quantity:fp32_simt_flops"),
        ("quantity:int4_ridge_point", "quantity:int4_tensor_ops"),
        ("quantity:int4_ridge_point", "quantity:hbm_bandwidth"),
        ("quantity:int4_ridge_per_simt", "quantity:int4_ridge_point"),
        ("quantity:int4_ridge_per_simt", "quantity:tensor_to_simt_ratio"),
    },
    "affected_by": {
        ("class:scan-op", "accelerator:h100-sxm"),
        ("class:scan-op", "accelerator:h200-sxm"),
        ("class:int4-op", "accelerator:h100-sxm"),
        ("class:int4-op", "accelerator:a100-sxm4-80gb"),
        ("class:memory-model", "accelerator:h200-sxm"),
    },
    "cites": {
        ("claim:scan-op/ridge-claim", "source:src-paper"),
        ("claim:scan-op/ridge-claim", "source:src-class"),
        ("claim:scan-op/simt-claim", "source:src-class"),
        ("claim:memory-model/cap-claim", "source:src-paper"),
        ("accelerator:h100-sxm", "source:src-datasheet"),
        ("accelerator:h200-sxm", "source:src-datasheet"),
        ("accelerator:a100-sxm4-80gb", "source:src-datasheet"),
    },
    "confirms": {
        ("evidence:ev-int4-a100", "claim:int4-op/int4-claim"),
        ("evidence:ev-bw-h100-new", "claim:int4-op/bw-claim"),
    },
    "refutes": {
        ("evidence:ev-bw-h100-old", "claim:int4-op/bw-claim"),
        ("evidence:ev-bw-a100", "claim:int4-op/bw-claim"),
    },
}


@pytest.mark.parametrize(("relation", "expected"), EDGES.items(), ids=list(EDGES))
def test_edges_of_each_relation(relation: str, expected: set[tuple[str, str]]) -> None:
    assert edges(relation) == expected


def test_specifies_edges_carry_the_value_and_the_source_backs_its_quantities() -> None:
    specifies = edges("specifies")
    assert len(specifies) == 15
    g = fixture_graph().g
    h200 = g.edges["accelerator:h200-sxm", "quantity:hbm_bandwidth"]
    assert (h200["value"], h200["unit"]) == (4.8e12, "B/s")
    backs = g.edges["accelerator:h100-sxm", "source:src-datasheet"]
    assert backs["quantities"] == ["bf16_tensor_flops", "hbm_bandwidth"]
    null = g.edges["accelerator:h100-sxm", "quantity:int4_tensor_ops"]
    assert null["value"] is None and null["note"] == "no int4 tensor-core path"


def test_evidence_edges_carry_the_verdict() -> None:
    g = fixture_graph().g
    assert g.edges["evidence:ev-bw-a100", "claim:int4-op/bw-claim"]["verdict"] == "refuted"
    assert ("evidence:ev-bw-a100", "accelerator:a100-sxm4-80gb") in edges("ran_on")
    assert len(edges("ran_on")) == 4


def test_every_edge_has_a_known_relation_and_nothing_dangles() -> None:
    g = fixture_graph().g
    relations = {"has", "depends_on", "derived_from", "affected_by", "specifies", "cites", "ran_on"}
    assert {d["relation"] for _, _, d in g.edges(data=True)} <= relations | EVIDENCE_RELATIONS
    assert g.graph["dangling"] == []


def test_dangling_references_are_listed_not_invented() -> None:
    kb = fixture_graph().kb
    row = (
        kb.classes["scan-op"]
        .flop.hardware_parameters[0]
        .model_copy(update={"quantity": "no_such_quantity"})
    )
    flop = kb.classes["scan-op"].flop.model_copy(update={"hardware_parameters": [row]})
    broken = KnowledgeBase(root=None)
    broken.records = {
        **kb.records,
        "scan-op": kb.classes["scan-op"].model_copy(update={"flop": flop}),
    }
    g = build_graph(broken)
    assert node_id("quantity", "no_such_quantity") not in g
    assert {
        "source": "claim:scan-op/ridge-claim",
        "relation": "depends_on",
        "target": "quantity:no_such_quantity",
    } in g.graph["dangling"]


def test_formula_inputs_match_the_whitelist_parser() -> None:
    from flopkb.grammar.formula import parse_formula
    from flopkb.graph.build import _formula_names

    for text in [
        "bf16_tensor_flops / hbm_bandwidth",
        "hbm_bandwidth * 1000 / sm_count",
        "2**x_1 + 1e12*y - 1.5E-3 * (z / -w)",
    ]:
        assert _formula_names(text) == parse_formula(text).names
    assert _formula_names("__import__('os')") == frozenset()


def test_build_leaves_the_garbage_collector_as_it_found_it() -> None:
    import gc

    assert gc.isenabled()
    build_graph(fixture_graph().kb)
    assert gc.isenabled()
    gc.disable()
    try:
        build_graph(fixture_graph().kb)
        assert not gc.isenabled()
    finally:
        gc.enable()
