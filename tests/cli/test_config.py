"""Configuration (`[tool.flopkb]` / flopkb.toml), the same as flags, and inline suppression."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import break_effect, make_repo

runner = CliRunner()


def rules(*args: str) -> tuple[int, list[str]]:
    result = runner.invoke(app, ["validate", *args, "-f", "json"])
    data = json.loads(result.stdout)
    found = [f["rule"] for key in ("errors", "warnings", "notes") for f in data.get(key, [])]
    return result.exit_code, sorted(found)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = make_repo(tmp_path, with_git=False)
    break_effect(repo)
    monkeypatch.chdir(repo)
    return repo


def test_pyproject_ignore_and_the_flag_that_overrides_it(repo: Path) -> None:
    assert rules() == (1, ["FKB201"])
    pyproject = '[project]\nname = "kb"\n\n[tool.flopkb]\nignore = ["FKB2"]\n'
    (repo / "pyproject.toml").write_text(pyproject)
    assert rules() == (0, [])
    # a flag replaces the config's list
    assert rules("--ignore", "FKB6") == (1, ["FKB201"])
    assert rules("--select", "FKB201") == (1, ["FKB201"])
    assert rules("--select", "FKB3") == (0, [])


def test_flopkb_toml_with_root_strict_and_exclude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, with_git=False)
    kb = tmp_path / "project" / "data"
    (tmp_path / "project").mkdir()
    repo.rename(kb)
    break_effect(kb)
    (tmp_path / "project" / "flopkb.toml").write_text(
        'root = "data"\nexclude = ["records/classes/*"]\nstrict = true\n'
    )
    (tmp_path / "project" / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "project" / "docs")
    result = runner.invoke(app, ["validate", "-f", "json"])
    data = json.loads(result.stdout)
    assert data["kb"]["root"] == str(kb)
    # the class is excluded: its FKB201 is gone, and the source it cited is now uncited, a
    # warning that fails under the config's strict = true
    assert [f["rule"] for f in data["errors"]] == []
    assert [f["rule"] for f in data["warnings"]] == ["FKB602"]
    assert result.exit_code == 1
    assert runner.invoke(app, ["validate", "--no-strict"]).exit_code == 0
    assert rules("--exclude", "nothing/*") == (1, ["FKB201"])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[tool.flopkb]\nselekt = ['FKB2']\n", "unknown key 'selekt'"),
        ("[tool.flopkb]\nstrict = 'yes'\n", "`strict` must be true or false"),
        ("[tool.flopkb\n", "not valid TOML"),
        ("[tool.flopkb]\nignore = ['FKB8']\n", "'FKB8' matches no rule code"),
    ],
)
def test_a_config_mistake_is_a_usage_error(repo: Path, config: str, message: str) -> None:
    (repo / "pyproject.toml").write_text(config)
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_an_unknown_rule_on_the_command_line_is_a_usage_error(repo: Path) -> None:
    result = runner.invoke(app, ["validate", "--select", "FKB2O1"])
    assert result.exit_code == 2 and "matches no rule code" in result.stderr


def test_quiet_prints_findings_only(repo: Path) -> None:
    result = runner.invoke(app, ["validate", "--quiet"])
    assert result.exit_code == 1
    assert [ln.split(": ")[1] for ln in result.stdout.splitlines()] == ["error"]


def _suppress(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_inline_suppression_above_the_line(repo: Path) -> None:
    path = repo / "records/classes/mamba2-ssd.yaml"
    _suppress(
        path,
        '      effect: "2-8x quicker',
        '      # flopkb: ignore[FKB201]\n      effect: "2-8x quicker',
    )
    assert rules() == (0, [])


def test_inline_suppression_on_the_line_and_unused_ones_reported(repo: Path) -> None:
    path = repo / "records/classes/mamba2-ssd.yaml"
    _suppress(path, 'fused scan"\n', 'fused scan"  # flopkb: ignore[FKB202, FKB201]\n')
    code, found = rules()
    assert (code, found) == (0, ["FKB701"])  # FKB202 suppressed nothing there: a warning
    assert rules("--strict")[0] == 1
    data = json.loads(runner.invoke(app, ["validate", "-f", "json"]).stdout)
    warning = data["warnings"][0]
    assert "ignore[FKB202]" in warning["message"] and warning["line"] > 1


def test_suppression_text_inside_a_scalar_is_content(repo: Path) -> None:
    path = repo / "records/classes/mamba2-ssd.yaml"
    # the same text inside the prose block (and the effect still broken): not a comment
    _suppress(path, "  Mamba-2's SSD", "  # flopkb: ignore[FKB201]\n  Mamba-2's SSD")
    assert rules() == (1, ["FKB201"])


def test_a_suppression_naming_no_rule_is_reported(repo: Path) -> None:
    path = repo / "records/sources/dao-gu-2024-ssd.yaml"
    path.write_text(path.read_text() + "# flopkb: ignore[FKB999]\n")
    assert rules() == (1, ["FKB201", "FKB701"])
