"""A pull request's own config cannot turn validation off (issue 27): `--isolated` reads none,
and even a config that is read never hides load failures, never excludes the whole KB, never
points `root` outside the repository, and is named in every summary."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import break_effect, make_repo

runner = CliRunner()


def run(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["validate", *args, "-f", "json"])
    return result.exit_code, json.loads(result.stdout)


def rules(data: dict) -> list[str]:
    return sorted(f["rule"] for key in ("errors", "warnings", "notes") for f in data.get(key, []))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small KB in a git repository, with a source that does not load (FKB104: not a
    mapping... any FKB1xx) and is cited, so FKB303 follows."""
    repo = make_repo(tmp_path)
    (repo / "records/sources/dao-gu-2024-ssd.yaml").write_text("id: [unclosed\n")
    monkeypatch.chdir(repo)
    return repo


def test_a_config_ignore_never_hides_load_failures_or_fkb303(repo: Path) -> None:
    code, data = run()
    broken = rules(data)
    assert code == 1 and "FKB303" in broken and any(r.startswith("FKB1") for r in broken)
    # a prefix of every rule: the rest is ignored, the load failure and FKB303 stay
    (repo / "flopkb.toml").write_text('ignore = ["FKB"]\n')
    code, data = run()
    assert code == 1
    assert rules(data) == sorted(r for r in broken if r.startswith("FKB1") or r == "FKB303")
    # a select that leaves them out does not hide them either
    (repo / "flopkb.toml").write_text('select = ["FKB6"]\n')
    code, data = run()
    assert code == 1 and "FKB303" in rules(data)
    # the command line is the caller's own choice
    code, data = run("--select", "FKB6")
    assert code == 0 and all(r.startswith("FKB6") for r in rules(data))


def test_a_config_ignore_of_load_failures_only_is_refused(repo: Path) -> None:
    (repo / "flopkb.toml").write_text('ignore = ["FKB1", "FKB303"]\n')
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2
    assert "never hides" in result.stderr and "flopkb.toml" in result.stderr


@pytest.mark.parametrize("exclude", ["*", "records/*", "records"])
def test_a_config_excluding_every_record_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exclude: str
) -> None:
    repo = make_repo(tmp_path)
    break_effect(repo)
    monkeypatch.chdir(repo)
    (repo / "flopkb.toml").write_text(f"exclude = [{exclude!r}]\n")
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2, result.output
    assert "matches every record file of the KB (7)" in result.stderr
    assert "flopkb.toml" in result.stderr
    assert "ok" not in result.stdout


@pytest.mark.parametrize("root", ["../elsewhere", "../../elsewhere", "ABSOLUTE", "link"])
def test_a_config_root_outside_the_repository_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, root: str
) -> None:
    repo = make_repo(tmp_path / "work")
    elsewhere = make_repo(tmp_path / "elsewhere-parent")
    os.symlink(elsewhere, tmp_path / "work" / "elsewhere")
    os.symlink(elsewhere, tmp_path / "elsewhere")
    os.symlink(elsewhere, repo / "link")
    root = str(elsewhere) if root == "ABSOLUTE" else root
    (repo / "flopkb.toml").write_text(f"root = {root!r}\n")
    monkeypatch.chdir(repo)
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2, result.output
    assert "lies outside its repository" in result.stderr


def test_a_config_root_inside_the_repository_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    (repo / "kb").mkdir()
    (repo / "records").rename(repo / "kb" / "records")
    (repo / "tools").mkdir()
    # a config in a subfolder may name a KB elsewhere in its repository
    (repo / "tools" / "flopkb.toml").write_text('root = "../kb"\n')
    monkeypatch.chdir(repo / "tools")
    code, data = run()
    assert code == 0 and data["kb"]["root"] == str(repo / "tools" / "../kb")


def test_a_config_in_a_subfolder_is_named_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    path = break_effect(repo)
    config = repo / "records" / "classes" / "flopkb.toml"
    config.write_text('ignore = ["FKB2"]\n')
    monkeypatch.chdir(repo)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1].endswith(f"; config {config}")
    _, data = run(str(path))
    assert data["kb"]["config"] == str(config)


def test_every_summary_names_its_config(repo: Path) -> None:
    last = runner.invoke(app, ["validate"]).stdout.splitlines()[-1]
    assert last.endswith("(found from the current folder upward); no config")
    (repo / "flopkb.toml").write_text("strict = false\n")
    last = runner.invoke(app, ["validate"]).stdout.splitlines()[-1]
    # the KB was found through its config: named once
    assert last.endswith(f"(config {repo / 'flopkb.toml'})")
    last = runner.invoke(app, ["validate", "--isolated"]).stdout.splitlines()[-1]
    assert last.endswith("; --isolated: no config read")


def test_isolated_reads_no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    break_effect(repo)
    monkeypatch.chdir(repo)
    (repo / "pyproject.toml").write_text(
        '[tool.flopkb]\nignore = ["FKB2"]\nexclude = ["records/classes/*"]\n'
    )
    code, data = run()
    assert code == 0 and "FKB201" not in rules(data)
    code, data = run("--isolated")
    assert code == 1 and rules(data) == ["FKB201"]
    assert data["kb"] == {"root": str(repo), "bundled": False, "config": None, "isolated": True}
    # a config that does not even parse is never read
    (repo / "pyproject.toml").write_text("[tool.flopkb\n")
    assert runner.invoke(app, ["validate"]).exit_code == 2
    code, data = run("--isolated")
    assert code == 1 and rules(data) == ["FKB201"]


def test_isolated_never_falls_back_to_another_kb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KB marked only by a config's `root`: without the config nothing says where it is, and
    checking the bundled KB instead would pass."""
    repo = make_repo(tmp_path)
    break_effect(repo)
    (repo / "data").mkdir()
    (repo / "records").rename(repo / "data" / "records")
    (repo / "flopkb.toml").write_text('root = "data"\n')
    monkeypatch.chdir(repo)
    assert run()[0] == 1
    result = runner.invoke(app, ["validate", "--isolated"])
    assert result.exit_code == 2
    assert "--isolated reads no config" in result.stderr
    code, data = run("--isolated", "--kb", "data")
    assert code == 1 and rules(data) == ["FKB201"]
