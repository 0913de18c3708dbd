"""KB discovery (like git), the bundled KB only when asked or when nothing is around, the KB
named in every output, and a missing or empty `--kb` as a usage error for every command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.paths import bundled_root
from tests.cli.kbrepo import break_effect, make_repo

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize("inside", [".", "records", "records/classes", "records/sources"])
def test_any_folder_inside_a_kb_checks_that_kb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inside: str
) -> None:
    repo = make_repo(tmp_path)
    break_effect(repo)
    monkeypatch.chdir(repo / inside)
    result = run("validate", "-f", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["kb"] == {"root": str(repo), "bundled": False, "config": None, "isolated": False}
    assert [e["rule"] for e in data["errors"]] == ["FKB201"]
    text = run("validate")
    assert text.exit_code == 1
    summary = text.stdout.splitlines()[-1]
    assert summary.endswith(f"KB {repo} (found from the current folder upward); no config")


def test_a_given_path_is_searched_upward_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    break_effect(repo)
    monkeypatch.chdir(tmp_path)
    data = json.loads(run("validate", str(repo / "records/classes"), "-f", "json").stdout)
    assert data["kb"]["root"] == str(repo)
    assert [e["rule"] for e in data["errors"]] == ["FKB201"]


def test_a_folder_of_records_without_a_kb_never_falls_back_to_bundled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loose = tmp_path / "loose"
    shutil.copytree(make_repo(tmp_path, with_git=False) / "records/classes", loose)
    monkeypatch.chdir(loose)
    result = run("validate")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "--kb" in result.stderr
    as_json = run("validate", "-f", "json")
    assert as_json.exit_code == 2
    assert json.loads(as_json.stdout)["ok"] is False
    # the same for every command that reads the KB
    assert run("claims").exit_code == 2


def test_bundled_only_when_nothing_is_around_and_then_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "ci.yaml").write_text("jobs: {}\n")  # YAML, but not records
    monkeypatch.chdir(tmp_path / "empty")
    result = run("validate", "-f", "json")
    assert json.loads(result.stdout)["kb"] == {
        "root": str(bundled_root()), "bundled": True, "config": None, "isolated": False
    }
    text = run("validate").stdout.splitlines()[-1]
    assert "bundled KB: no KB found from the current folder upward" in text


def test_kb_bundled_is_asked_for_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    break_effect(repo)
    monkeypatch.chdir(repo)
    result = run("--kb", "bundled", "validate", "-f", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["kb"]["bundled"] is True


COMMANDS = [
    ["validate"],
    ["claims"],
    ["extract", "mamba2-ssd"],
    ["hw", "show", "h100-sxm"],
    ["hw", "compare", "h100-sxm", "h200-sxm"],
    ["graph", "status"],
    ["graph", "affects", "hbm_bandwidth"],
    ["graph", "export"],
    ["verify"],
    ["schema", "export", "--check"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("kb", ["missing", "empty"])
def test_kb_that_does_not_exist_or_holds_no_records_exits_2(
    tmp_path: Path, command: list[str], kb: str
) -> None:
    folder = tmp_path / "kb"
    if kb == "empty":
        (folder / "records").mkdir(parents=True)
    result = run("--kb", str(folder), *command)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("flopkb: error: --kb ")
    assert result.stderr.count("\n") == 1
    if command[0] != "verify" and command[-1] != "--check":
        as_json = run("--kb", str(folder), *command, "--format", "json")
        assert as_json.exit_code == 2
        assert json.loads(as_json.stdout)["error"]["message"].startswith("--kb ")


def test_files_outside_any_kb_are_checked_on_their_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_git=False)
    lone = tmp_path / "lone.yaml"
    shutil.copy(repo / "records/sources/dao-gu-2024-ssd.yaml", lone)
    shutil.rmtree(repo)
    result = run("validate", str(lone), "-f", "json")
    data = json.loads(result.stdout)
    assert data["kb"] is None and data["records"] == 1
