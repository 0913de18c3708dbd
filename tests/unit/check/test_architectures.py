"""FKB9xx: architecture records and the claim rows whose figures are computed from them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopkb.check import run_checks
from flopkb.check.architectures import _agrees
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.kb import load_kb
from flopkb.paths import bundled_root


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(bundled_root() / "records", tmp_path / "records")
    return tmp_path


def _codes(root: Path, prefix: str = "FKB9") -> list[tuple[str, str, str]]:
    kb, found = load_kb(root)
    found += run_checks(kb)
    return [(f.rule, f.record or "", f.message) for f in found if f.rule.startswith(prefix)]


def test_bundled_kb_has_no_architecture_findings() -> None:
    assert _codes(bundled_root()) == []


@pytest.mark.parametrize(
    ("magnitude", "value", "ok"),
    [("92%", 92.3, True), ("92%", 91.4, False), ("8x", 8.0, True), ("8x", 8.6, False),
     ("3:1", 20 / 7, True), ("3:1", 2.4, False), ("up to 75%", 74.07, True),
     ("up to 75%", 76.0, False), ("~20%", 21.5, True), ("3.73x", 3.736, False)],
)  # fmt: skip
def test_rounding_of_the_magnitude(magnitude: str, value: float, ok: bool) -> None:
    assert _agrees(parse_magnitude(magnitude), value) is ok


def test_a_figure_the_architecture_does_not_give_is_an_error(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    jamba = root / "records" / "architectures" / "jamba-1-5-mini.yaml"
    # attention in 2 layers of 8, not 1: the KV cache is 4x, not 8x, smaller than Mixtral's
    jamba.write_text(jamba.read_text().replace('"M-MEM-ME*-MEM-ME"', '"M-ME*-MEM-ME*-ME"'))
    found = _codes(root)
    assert [(c, r) for c, r, _ in found] == [("FKB904", "jamba")]
    assert "computed kv_cache_ratio" in found[0][2] and "4x" in found[0][2]


def test_unknown_architecture_and_unsourced_value(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    cls = root / "records" / "classes" / "samba.yaml"
    cls.write_text(cls.read_text().replace("[samba-1-7b,", "[samba-9b,"))
    arch = root / "records" / "architectures" / "llama-3-1-8b.yaml"
    text = arch.read_text().replace(
        'd_model: {value: 4096, source: {id: hf-llama-3-1-8b-config, locator: "config.json, '
        'hidden_size"}}',
        "d_model: {value: 4096}",
    )
    assert text != arch.read_text()
    arch.write_text(text)
    codes = sorted((c, r) for c, r, _ in _codes(root))
    assert codes == [("FKB901", "llama-3-1-8b"), ("FKB902", "samba")]


def test_parameter_count_far_from_the_reported_one_is_a_warning(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    arch = root / "records" / "architectures" / "llama-3-1-8b.yaml"
    arch.write_text(arch.read_text().replace("value: 14336", "value: 28672"))
    assert [(c, r) for c, r, _ in _codes(root)] == [("FKB906", "llama-3-1-8b")]
