"""Accelerator `match` patterns (issue 18): compiled at validation, bounded, never overlapping,
and never raising when verify matches a GPU name."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from flopkb.grammar.matching import compile_pattern
from flopkb.kb import load_kb
from flopkb.validate import validate
from flopkb.verify.machine import match_accelerator

BUNDLED = Path(__file__).resolve().parents[3] / "records"
H100 = "records/accelerators/h100-sxm.yaml"
A100 = "records/accelerators/a100-pcie-80gb.yaml"  # sorts first among the accelerators


def copy_kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(BUNDLED, root / "records", ignore=shutil.ignore_patterns("*.png", "ev-*"))
    return root


def set_match(root: Path, rel: str, patterns: list[str]) -> int:
    """Replace the record's `match` list; returns the 1-based line of its first pattern."""
    path = root / rel
    lines = path.read_text(encoding="utf-8").splitlines()
    at = lines.index("match:")
    end = at + 1
    while lines[end].startswith("- "):
        end += 1
    quoted = [f"- '{p}'" for p in patterns]
    lines[at + 1 : end] = quoted
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return at + 2


def errors(root: Path, code: str) -> list:
    return [f for f in validate(root).errors if f.rule == code]


def test_the_bundled_patterns_are_valid_and_do_not_overlap() -> None:
    result = validate(BUNDLED.parent)
    assert not [f for f in result.findings if f.rule in {"FKB420", "FKB421", "FKB422"}]


def test_an_invalid_regex_is_a_located_error(tmp_path: Path) -> None:
    root = copy_kb(tmp_path)
    line = set_match(root, H100, ["(unclosed"])
    found = errors(root, "FKB420")
    assert len(found) == 1
    assert found[0].file.endswith("h100-sxm.yaml") and found[0].line == line
    assert "(unclosed" in found[0].message and "missing )" in found[0].message
    # and verify never raises on it: the bad pattern matches nothing
    kb, _ = load_kb(root)
    assert match_accelerator(kb, "NVIDIA H100 80GB HBM3") is None
    assert match_accelerator(kb, "NVIDIA H200") == "h200-sxm"


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a*)*b", "(x|xx)+y", "a" * 300, r"(a)\1", ".*.*.*.*.*x"],
)
def test_a_pattern_that_could_run_long_is_refused(tmp_path: Path, pattern: str) -> None:
    root = copy_kb(tmp_path)
    set_match(root, H100, [pattern])
    started = time.process_time()
    found = errors(root, "FKB420")
    assert len(found) == 1, [f.message for f in validate(root).findings]
    assert time.process_time() - started < 5
    assert isinstance(compile_pattern(pattern), str)


def test_a_pattern_that_matches_every_gpu_is_an_error(tmp_path: Path) -> None:
    root = copy_kb(tmp_path)
    # `.` on the id that sorts first once claimed every GPU for the A100 PCIe record
    set_match(root, A100, ["."])
    kb, _ = load_kb(root)
    assert match_accelerator(kb, "NVIDIA H200") == "a100-pcie-80gb"
    assert [f.record for f in errors(root, "FKB421")] == ["a100-pcie-80gb"]
    overlaps = errors(root, "FKB422")
    # every other accelerator is named as overlapping with it
    assert {f.record for f in overlaps} >= {"a100-pcie-80gb", "h200-sxm", "h100-sxm"}


def test_two_accelerators_claiming_one_device_name_is_an_error(tmp_path: Path) -> None:
    root = copy_kb(tmp_path)
    # unanchored at the end, the H200's pattern also claims the H100's name
    set_match(root, "records/accelerators/h200-sxm.yaml", ["^NVIDIA H\\d00"])
    found = errors(root, "FKB422")
    assert {f.record for f in found} == {"h100-sxm", "h200-sxm"}
    assert all("NVIDIA H" in f.message for f in found)


def test_matching_never_raises_on_any_name() -> None:
    kb, _ = load_kb(BUNDLED.parent)
    for name in ["", "\x00", "NVIDIA H200" * 10_000, "\udcff", "(", "NVIDIA H200\n"]:
        assert match_accelerator(kb, name) in (None, *kb.accelerators)
