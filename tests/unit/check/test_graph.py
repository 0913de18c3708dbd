"""FKB6xx: orphan quantities and sources, claims not applicable on a listed part."""

from __future__ import annotations

from flopkb.check import run_checks
from flopkb.kb import load_kb
from flopkb.rules import RULES
from tests.unit.graph.graph_fixture import GRAPH_KB


def test_graph_findings_on_the_fixture() -> None:
    kb, _ = load_kb(GRAPH_KB)
    found = [f for f in run_checks(kb) if f.rule.startswith("FKB6")]
    assert [(f.rule, f.record, f.severity.value) for f in found] == [
        ("FKB603", "int4-op", "info"),
        ("FKB601", "l2_cache_size", "warning"),
        ("FKB602", "src-orphan", "warning"),
    ]
    na = found[0]
    assert na.message == (
        "claim int4-op/int4-claim is not applicable on h100-sxm: int4_tensor_ops (or an input "
        "of it) is null there"
    )
    # located at the row's `quantity` key (line 11 of classes/int4-op.yaml)
    assert na.file.endswith("int4-op.yaml") and na.line == 11


def test_rules_are_declared() -> None:
    run_checks(load_kb(GRAPH_KB)[0])
    assert {c for c in RULES if c.startswith("FKB6")} == {"FKB601", "FKB602", "FKB603"}
