"""A structural error hides none of the record's other findings in the same run."""

from __future__ import annotations

import shutil
from pathlib import Path

from flopkb.paths import bundled_root
from flopkb.validate import validate

SMALL = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"


def _kb(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copytree(SMALL, tmp_path / "kb")
    return tmp_path / "kb", tmp_path / "kb/records/classes/mamba2-ssd.yaml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _rules(root: Path) -> list[tuple[str, int]]:
    return sorted((f.rule, f.line) for f in validate(root).findings if f.severity.value != "info")


def test_unknown_field_and_provenance_in_one_run(tmp_path: Path) -> None:
    root, path = _kb(tmp_path)
    _edit(path, "key_points:", "keypoints_typo: 1\nkey_points:")
    _edit(path, "effect: 6x faster than", "effect: 6x quicker than")
    assert [r for r, _ in _rules(root)] == ["FKB122", "FKB201"]


def test_a_broken_row_hides_neither_the_other_rows_nor_the_references(tmp_path: Path) -> None:
    root, path = _kb(tmp_path)
    _edit(path, "basis: derived", "basis: guessed")  # row 3: structural (FKB121)
    _edit(path, '{id: dao-gu-2024-ssd, locator: "Fig. 10"}', '{id: no-such-source, locator: "x"}')
    _edit(path, "magnitude: 6x at 16K", "magnitude: 7x at 16K")  # row 2: FKB202
    _edit(path, "affected_by_hardware: [h100-sxm]", "affected_by_hardware: [h100-sxm, h999]")
    found = [r for r, _ in _rules(root)]
    assert found == ["FKB121", "FKB202", "FKB301", "FKB301"]


def test_title_and_history_problems_still_check_the_claims(tmp_path: Path) -> None:
    root, path = _kb(tmp_path)
    _edit(path, "title: Mamba-2 state space duality (chunked SSD)\n", "title: ''\n")
    _edit(path, "date: 2026-10-05", "date: 20261005")
    _edit(path, "effect: 6x faster than", "effect: 6x quicker than")
    assert [r for r, _ in _rules(root)] == ["FKB121", "FKB121", "FKB201"]


def test_evidence_of_a_dropped_row_is_not_reported_again(tmp_path: Path) -> None:
    shutil.copytree(bundled_root() / "records", tmp_path / "kb/records")
    shutil.copytree(bundled_root() / "kernels", tmp_path / "kb/kernels")
    path = tmp_path / "kb/records/classes/mamba2-ssd.yaml"
    row = "    - id: ssd-vs-fused-scan\n"
    text = path.read_text(encoding="utf-8")
    start = text.index(row)
    basis = text.index("basis: cited", start)
    path.write_text(text[:basis] + "basis: quoted" + text[basis + len("basis: cited"):])
    rules = {f.rule for f in validate(tmp_path / "kb").findings}
    assert "FKB121" in rules and "FKB501" not in rules
    # the control: a row that really is gone leaves its evidence dangling
    path.write_text(text.replace(row, "    - id: renamed-row\n"))
    assert "FKB501" in {f.rule for f in validate(tmp_path / "kb").findings}
