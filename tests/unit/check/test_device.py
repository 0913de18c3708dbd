"""FKB430/FKB431: datasheet specs against the device properties verify recorded in evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flopkb.check.device import PROPERTIES, agrees, half_unit
from flopkb.paths import bundled_root
from flopkb.scaffold import init_kb
from flopkb.validate import validate

CALIBRATION = "ev-calibration-h200-sxm-20261201t153955z"
# the bundled H100 SXM: 132 SMs, 50 MB L2 (NVIDIA's binary MB), 80 GB
AGREEING = {"sm_count": 132, "l2_cache_bytes": 52428800, "memory_bytes": 85017624576}


def _kb(tmp_path: Path, **machine: int) -> Path:
    """A KB from `flopkb init` (whose accelerator is the bundled h100-sxm) with one calibration
    evidence record on it, whose machine reports `machine` (defaults: values that agree)."""
    root = tmp_path / "kb"
    init_kb(root)
    source = bundled_root() / "records/evidence" / f"{CALIBRATION}.yaml"
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    data["id"] = "ev-calibration-h100"
    data["accelerator"] = "h100-sxm"
    data["machine"] = {**data["machine"], "gpu": "NVIDIA H100 80GB HBM3", **AGREEING, **machine}
    (root / "records/evidence/ev-calibration-h100.yaml").write_text(
        yaml.safe_dump(data, sort_keys=False), encoding="utf-8"
    )
    return root


def _device_findings(root: Path) -> list[tuple[str, str]]:
    return [
        (f.rule, f.message.split(" ", 1)[0])
        for f in validate(root).findings
        if f.rule in ("FKB430", "FKB431")
    ]


def test_agreeing_device_properties_give_no_finding(tmp_path: Path) -> None:
    assert _device_findings(_kb(tmp_path)) == []


@pytest.mark.parametrize(
    "machine, quantity",
    [
        ({"sm_count": 114}, "sm_count"),
        # the H200's 60 MiB against the H100's 50 MB: the bug this rule was made for
        ({"l2_cache_bytes": 62914560}, "l2_cache_size"),
        # more memory than the part has, in either reading of GB
        ({"memory_bytes": 90 * 2**30}, "memory_capacity"),
        # far less than the reservation explains
        ({"memory_bytes": 70 * 2**30}, "memory_capacity"),
    ],
)
def test_a_spec_the_device_contradicts_is_fkb420(
    tmp_path: Path, machine: dict[str, int], quantity: str
) -> None:
    root = _kb(tmp_path, **machine)
    assert _device_findings(root) == [("FKB430", quantity)]
    [finding] = [f for f in validate(root).findings if f.rule == "FKB430"]
    assert finding.file.endswith("records/accelerators/h100-sxm.yaml")
    assert "ev-calibration-h100" in finding.message and finding.severity.value == "warning"


def test_a_spec_citing_evidence_of_another_part_is_fkb421(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    path = root / "records/accelerators/h100-sxm.yaml"
    text = path.read_text(encoding="utf-8")
    # cite the evidence for a quantity it does not record (bf16 rate is no device property)
    path.write_text(
        text.replace("id: nvidia-h100-datasheet", "id: ev-calibration-h100", 1), encoding="utf-8"
    )
    assert ("FKB431", "bf16_tensor_flops") in _device_findings(root)
    assert [f.rule for f in validate(root).findings if f.rule in ("FKB301", "FKB302")] == []


def test_the_bundled_h200_l2_agrees_with_its_calibration() -> None:
    result = validate(bundled_root())
    assert [f for f in result.findings if f.rule in ("FKB430", "FKB431")] == []
    h200 = yaml.safe_load(
        (bundled_root() / "records/accelerators/h200-sxm.yaml").read_text(encoding="utf-8")
    )
    assert h200["specs"]["l2_cache_size"]["source"]["id"] == CALIBRATION
    prop = next(p for p in PROPERTIES if p.quantity == "l2_cache_size")
    assert agrees(prop, 60.0, "MB", 62914560) is True
    assert agrees(prop, 50.0, "MB", 62914560) is False


def test_rounding_is_the_printed_precision() -> None:
    assert half_unit(50.0) == 0.5 and half_unit(4.8) == pytest.approx(0.05)
    prop = next(p for p in PROPERTIES if p.quantity == "l2_cache_size")
    # 6 MB (RTX 3090) is 6,291,456 B in binary MB: agreed; 7 MiB is not 6 MB in any reading
    assert agrees(prop, 6.0, "MB", 6291456) is True
    assert agrees(prop, 6.0, "MB", 7 * 2**20) is False
    assert agrees(prop, 6.0, "TFLOP/s", 6291456) is None
