"""`flopkb extract`: pasteable YAML of candidate rows; JSON equals the library's proposals."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.extract import propose
from flopkb.kb import load_kb
from flopkb.paths import bundled_root

runner = CliRunner()
KB = ["--kb", str(bundled_root())]


def test_yaml_is_pasteable_rows() -> None:
    result = runner.invoke(app, [*KB, "extract", "mamba2-ssd"])
    assert result.exit_code == 0, result.output
    rows = yaml.safe_load(result.stdout)
    assert rows and all(r["basis"] == "unverified" for r in rows)
    assert {"2-8x", "crossover at 2K", "6x at 16K"} <= {r["magnitude"] for r in rows}


def test_json_equals_library() -> None:
    result = runner.invoke(app, [*KB, "extract", "samba", "--format", "json"])
    assert result.exit_code == 0, result.output
    kb, _ = load_kb(bundled_root())
    assert json.loads(result.stdout) == [c.as_row() for c in propose(kb.classes["samba"])]


def test_unknown_record_exits_2() -> None:
    result = runner.invoke(app, [*KB, "extract", "mamba3"])
    assert result.exit_code == 2
    assert "no class record" in result.stderr
