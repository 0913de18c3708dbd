"""One hostile record never takes down `validate`, `claims` or `graph` (issue 12): exit 1 with
findings for validate, an answer for the queries, never exit 2 or a traceback."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.paths import bundled_root

runner = CliRunner()


@pytest.fixture(scope="module")
def hostile_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled KB with a 5,000-digit integer in one class record and an evidence timestamp
    at the end of the calendar (with an offset) in one evidence record."""
    root = tmp_path_factory.mktemp("hostile") / "kb"
    shutil.copytree(bundled_root() / "records", root / "records")
    samba = root / "records/classes/samba.yaml"
    samba.write_text(samba.read_text() + "size: " + "9" * 5000 + "\n")
    evidence = sorted((root / "records/evidence").glob("ev-mamba2-ssd--ssd-vs-fused-scan*.yaml"))[0]
    text = re.sub(r"(?m)^timestamp: .*$", "timestamp: '9999-12-31T23:59:59-01:00'",
                  evidence.read_text())  # fmt: skip
    evidence.write_text(text)
    return root


def test_validate_reports_both_records_and_exits_1(hostile_kb: Path) -> None:
    result = runner.invoke(app, ["validate", str(hostile_kb), "--format", "json"])
    assert result.exit_code == 1, result.output
    errors = json.loads(result.stdout)["errors"]
    by_file = {(Path(e["file"]).name, e["rule"]) for e in errors}
    assert ("samba.yaml", "FKB114") in by_file
    # year 10000 once converted to UTC: evidence from the future, never the latest verdict
    assert any(name.startswith("ev-mamba2-ssd--ssd-vs-fused") and rule == "FKB508"
               for name, rule in by_file)  # fmt: skip
    assert not [e for e in errors if e["rule"] == "FKB199"]


def test_claims_answers_without_the_broken_record(hostile_kb: Path) -> None:
    result = runner.invoke(app, ["--kb", str(hostile_kb), "claims", "--format", "json"])
    assert result.exit_code == 0, result.output
    claims = {row["claim"] for row in json.loads(result.stdout)}
    assert "mamba2-ssd/ssd-vs-fused-scan" in claims
    assert not any(c.startswith("samba/") for c in claims)
    assert "loading error" in result.stderr


@pytest.mark.parametrize(
    "command", [["graph", "status"], ["graph", "affects", "hbm_bandwidth"], ["graph", "export"]]
)
def test_graph_answers_without_the_broken_record(hostile_kb: Path, command: list[str]) -> None:
    result = runner.invoke(app, ["--kb", str(hostile_kb), *command, "--format", "json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)
