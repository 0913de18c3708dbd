"""Figures in ASCII digits only (issue 27): a magnitude, a prose figure or a condition written in
another script's digits is a located error whose hint gives the ASCII reading; `--strict` is not
clean."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import SMALL

runner = CliRunner()
RECORD = "records/classes/mamba2-ssd.yaml"


def kb_with(tmp_path: Path, old: str, new: str) -> Path:
    kb = tmp_path / "kb"
    shutil.copytree(SMALL, kb)
    path = kb / RECORD
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    return kb


def findings(kb: Path, *args: str) -> tuple[int, list[dict]]:
    result = runner.invoke(app, ["validate", str(kb), "--strict", *args, "-f", "json"])
    data = json.loads(result.stdout)
    return result.exit_code, data["errors"] + data["warnings"]


@pytest.mark.parametrize(
    ("old", "new", "rule", "line", "reading"),
    [
        # the prose quotes a Bengali four (it looks like an 8) and the row cites it
        ("“2-8x faster", "“\u09ea-8x faster", "FKB214", 5, "'4-8x'"),
        ('magnitude: "2-8x"', 'magnitude: "\u09ea-8x"', "FKB203", 21, "'4-8x'"),
        ('magnitude: "2-8x"', 'magnitude: "\U0001d7d0-8x"', "FKB203", 21, "'2-8x'"),
        ("magnitude: 6x at 16K", "magnitude: \uff16x at 16K", "FKB203", 29, "'6x at 16K'"),
        ("head_dim: 64,", 'head_dim: "\u0666\u0664",', "FKB214", 24, "'64'"),
    ],
)
def test_other_digits_are_a_located_error_with_the_ascii_reading(
    tmp_path: Path, old: str, new: str, rule: str, line: int, reading: str
) -> None:
    kb = kb_with(tmp_path, old, new)
    code, found = findings(kb)
    assert code == 1
    mine = [f for f in found if f["rule"] == rule]
    assert len(mine) == 1, found
    assert mine[0]["file"].endswith(RECORD) and mine[0]["line"] == line
    assert "ASCII digits" in mine[0]["message"]
    assert reading in mine[0]["hint"]
