"""The bundled KB holds every claim of the starting material (A1-D4) with an honest basis, and
validates clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import ClassRecord
from flopkb.paths import bundled_root
from flopkb.validate import validate
from flopkb.verify.machine import match_accelerator

# The starting material's claims: their rows and bases by label, quoted figures, experiments.
EXPECTED = yaml.safe_load((Path(__file__).with_name("starting_claims.yaml")).read_text("utf-8"))
CLAIMS: dict[str, dict[str, str]] = EXPECTED["labels"]
MAGNITUDES: dict[str, str] = EXPECTED["magnitudes"]
EXPERIMENTS: dict[str, str] = EXPECTED["experiments"]

REQUIRED_QUANTITIES = [
    "bf16_tensor_flops",
    "fp16_tensor_flops",
    "tf32_tensor_flops",
    "int8_tensor_ops",
    "int4_tensor_ops",
    "fp32_simt_flops",
    "hbm_bandwidth",
    "memory_capacity",
    "l2_cache_size",
    "smem_per_sm",
    "sm_count",
]
REQUIRED_COMPUTED = ("ridge_point_bf16", "tensor_to_simt_ratio", "int8_to_bf16_ratio")
REQUIRED_ACCELERATORS = (
    "h100-sxm",
    "h200-sxm",
    "a100-sxm4-80gb",
    "a100-pcie-80gb",
    "rtx-4090",
    "rtx-3090",
    "l40s",
)
REQUIRED_CLASSES = [
    "selective-ssm-scan",
    "mamba2-ssd",
    "flash-attention-2",
    "dense-gemm",
    "low-rank-gemm",
    "int8-gemm",
    "gpu-reduction",
    "nemotron-h",
    "samba",
    "jamba",
    "kimi-linear",
]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    loaded, findings = load_kb(bundled_root())
    assert not findings
    return loaded


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_every_claim_of_claims_md_is_present_with_its_basis(
    kb: KnowledgeBase, claim_id: str
) -> None:
    for global_id, basis in CLAIMS[claim_id].items():
        found = kb.claim(global_id)
        assert found is not None, f"{claim_id}: {global_id} missing"
        _, row = found
        assert row.basis.value == basis, f"{claim_id}: {global_id} is {row.basis.value}"
        if basis == "cited":
            assert row.source is not None and row.source.locator
        if basis == "unverified":
            assert row.source is None
        if basis == "derived":
            # a formula over quantities, or a figure computed from architecture records
            assert row.formula or row.derived_from


def test_quoted_figures_and_experiments(kb: KnowledgeBase) -> None:
    for global_id, magnitude in MAGNITUDES.items():
        assert kb.claim(global_id)[1].magnitude == magnitude  # type: ignore[index]
    for global_id, experiment in EXPERIMENTS.items():
        row = kb.claim(global_id)[1]  # type: ignore[index]
        assert row.verify is not None and row.verify.experiment == experiment, global_id


def test_required_ids_exist(kb: KnowledgeBase) -> None:
    assert set(REQUIRED_QUANTITIES) | set(REQUIRED_COMPUTED) <= set(kb.quantities)
    assert all(kb.quantities[q].formula for q in REQUIRED_COMPUTED)
    assert set(REQUIRED_ACCELERATORS) <= set(kb.accelerators)
    assert set(REQUIRED_CLASSES) <= set(kb.classes)


def test_every_accelerator_gives_every_required_spec_with_unit_and_source(
    kb: KnowledgeBase,
) -> None:
    for acc in kb.accelerators.values():
        for qid in REQUIRED_QUANTITIES:
            spec = acc.specs[qid]
            assert spec.unit == kb.quantities[qid].unit, (acc.id, qid)
            assert spec.source is not None, (acc.id, qid)
            # a source record, or the calibration evidence that read the value from the device
            # (a figure no public document states; its note says so: flopkb.check.device)
            if spec.source.id in kb.evidence:
                evidence = kb.evidence[spec.source.id]
                assert evidence.accelerator == acc.id and evidence.experiment == "calibration"
                assert "read from the device" in (spec.note or ""), (acc.id, qid)
            else:
                assert spec.source.id in kb.sources, (acc.id, qid)
            if spec.value is None:
                assert spec.note, (acc.id, qid)


def test_hopper_has_no_int4_path_and_ampere_ada_do(kb: KnowledgeBase) -> None:
    for acc_id in ("h100-sxm", "h200-sxm"):
        assert kb.accelerators[acc_id].specs["int4_tensor_ops"].value is None
    for acc_id in ("a100-sxm4-80gb", "a100-pcie-80gb", "rtx-4090", "rtx-3090"):
        assert kb.accelerators[acc_id].specs["int4_tensor_ops"].value


@pytest.mark.parametrize(
    ("device_name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA A100-SXM4-40GB", None),
        ("NVIDIA GeForce RTX 3090 Ti", None),
        ("NVIDIA L40", None),
    ],
)
def test_match_maps_device_names_to_one_record(
    kb: KnowledgeBase, device_name: str, expected: str | None
) -> None:
    hits = [
        acc.id
        for acc in kb.accelerators.values()
        if any(re.search(p, device_name, re.IGNORECASE) for p in acc.match)
    ]
    assert hits == ([expected] if expected else [])
    # and verify's own matcher, the one that decides which record a GPU's evidence names
    assert match_accelerator(kb, device_name) == expected


def test_sources_leave_unknown_identifiers_empty(kb: KnowledgeBase) -> None:
    for sid in ("kamber-parhi-2025", "kamber-parhi-2026", "chatterjee-2026-roofline-ruggedness"):
        source = kb.sources[sid]
        assert source.identifier is None and source.url is None and source.note
    for source in kb.sources.values():
        if source.identifier and source.identifier.startswith("arXiv:"):
            assert (
                str(source.url)
                == f"https://arxiv.org/abs/{source.identifier.removeprefix('arXiv:')}"
            )


def test_bundled_kb_validates_without_errors() -> None:
    result = validate(bundled_root())
    assert not result.errors, [f"{f.rule} {f.record} {f.message}" for f in result.errors]
    # no warnings: the bundled KB passes --strict; the not-applicable INT4 rows on Hopper are notes
    assert result.warnings == []
    assert {(f.rule, f.record) for f in result.notes} == {("FKB603", "int8-gemm")}
    assert validate(bundled_root(), strict=True).ok


# A label of the developers' claims list ("CLAIMS A10", or the list's file name): users do not
# have that document, so a record says what the label stood for (the claim and the source it names).
DEVELOPER_LABEL = re.compile(r"\bCLAIMS(?:\.md|\s+[A-D]\d+)")
LIST_FILE = "CLAIMS" + ".md"


def test_no_record_cites_a_document_users_do_not_have() -> None:
    root = bundled_root() / "records"
    cited = {p.relative_to(root).as_posix(): DEVELOPER_LABEL.findall(p.read_text(encoding="utf-8"))
             for p in sorted(root.rglob("*.yaml"))}
    assert {path: labels for path, labels in cited.items() if labels} == {}
    # the pattern finds the labels it is there for
    assert DEVELOPER_LABEL.findall(f'note: "CLAIMS A10 (KDA part)." from {LIST_FILE}') == [
        "CLAIMS A10", LIST_FILE]


def test_records_by_type_follow_records_and_cannot_be_assigned(kb: KnowledgeBase) -> None:
    # `kb.classes` etc. are views of `records` by type (kb._RecordsOf): the same as records_of,
    # one type each, read-only on an instance, the descriptor itself on the class
    assert kb.classes == kb.records_of(ClassRecord)
    assert kb.classes and kb.accelerators and kb.sources and kb.evidence
    assert not set(kb.classes) & set(kb.accelerators)
    with pytest.raises(AttributeError):
        kb.classes = {}
    assert type(KnowledgeBase.classes).__name__ == "_RecordsOf"
