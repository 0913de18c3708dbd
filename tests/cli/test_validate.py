"""`flopkb validate` through typer's CliRunner: output formats, the JSON contract, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.validate import validate

CASES = Path(__file__).resolve().parents[1] / "cases"
VALID = CASES / "valid" / "small-kb"
runner = CliRunner()


def _run(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize(
    "case", [VALID, CASES / "invalid" / "effect-not-verbatim", CASES / "invalid" / "nul-byte"]
)
def test_json_equals_the_library(case: Path) -> None:
    result = _run("validate", str(case), "--format", "json")
    assert json.loads(result.stdout) == validate(case).as_dict()
    assert result.exit_code == (0 if validate(case).ok else 1)


def test_json_contract_shape() -> None:
    data = json.loads(_run("validate", str(CASES / "invalid" / "new-figure"), "-f", "json").stdout)
    assert set(data) == {"ok", "kb", "records", "errors", "warnings", "notes"}
    assert data["kb"]["bundled"] is False
    assert Path(data["kb"]["root"]).resolve() == (CASES / "invalid" / "new-figure").resolve()
    assert data["ok"] is False and data["records"] == 6
    row = data["errors"][0]
    assert {"file", "line", "column", "record", "rule", "message"} <= set(row)
    assert (row["rule"], row["line"], row["record"]) == ("FKB202", 15, "ssd")


def test_text_lines() -> None:
    result = _run("validate", str(CASES / "invalid" / "unknown-field"))
    assert result.exit_code == 1
    line = next(ln for ln in result.stdout.splitlines() if "FKB122" in ln)
    assert line.endswith(
        "records/sources/x.yaml:4:1: error: FKB122 [x] titel: unknown field 'titel' "
        "(hint: did you mean 'title'?)"
    )
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith("failed: 2 errors, 0 warnings in 1 record file; KB ")
    assert str(CASES / "invalid" / "unknown-field") in summary


def test_github_annotations() -> None:
    result = _run("validate", str(CASES / "invalid" / "duplicate-key"), "--format", "github")
    assert result.exit_code == 1
    assert result.stdout.startswith("::error file=")
    assert ",line=11,col=1,title=FKB106::" in result.stdout


def test_clean_kb_exits_0() -> None:
    result = _run("validate", str(VALID))
    assert result.exit_code == 0
    assert result.stdout.startswith("ok: 0 errors")


def test_warnings_fail_only_with_strict() -> None:
    case = str(CASES / "invalid" / "wrong-folder")
    assert _run("validate", case).exit_code == 0
    strict = _run("validate", case, "--strict", "-f", "json")
    assert strict.exit_code == 1
    assert json.loads(strict.stdout)["ok"] is False


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = _run("validate", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "no such file or folder" in result.stderr


def test_not_a_yaml_file_is_a_usage_error(tmp_path: Path) -> None:
    other = tmp_path / "x.txt"
    other.write_text("a")
    assert _run("validate", str(other)).exit_code == 2


def test_kb_option_and_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(VALID, tmp_path / "kb")
    assert _run("--kb", str(tmp_path / "kb"), "validate").exit_code == 0
    monkeypatch.chdir(tmp_path / "kb")
    result = _run("validate", "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["records"] == 7


def test_given_files_resolve_against_their_kb_but_report_only_themselves(tmp_path: Path) -> None:
    shutil.copytree(CASES / "invalid" / "missing-reference", tmp_path / "kb")
    acc = tmp_path / "kb/records/accelerators/h100-sxm.yaml"
    clean = _run("validate", str(acc), "-f", "json")
    assert clean.exit_code == 0, clean.stdout
    assert json.loads(clean.stdout)["records"] == 1
    cls = tmp_path / "kb/records/classes/ssd.yaml"
    dirty = json.loads(_run("validate", str(cls), "-f", "json").stdout)
    assert [e["rule"] for e in dirty["errors"]] == ["FKB301"]


def test_size_limit_option(tmp_path: Path) -> None:
    result = _run("validate", str(VALID), "--max-bytes", "100", "-f", "json")
    assert result.exit_code == 1
    assert {e["rule"] for e in json.loads(result.stdout)["errors"]} == {"FKB102"}
