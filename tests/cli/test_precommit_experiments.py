"""The `flopkb-validate` pre-commit hook sees a broken experiment declaration (issue 27):
`--changed` takes changed files under the KB's experiments/ and kernels/ and reports what they
feed (the declaration, the claims linking it, its evidence); FKB507 tells a declaration with
errors from one that does not exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import commit_all, copy_example, git
from tests.cli.test_precommit import entry_args, hook

DECLARATION = "experiments/rmsnorm-fused-vs-unfused.yaml"
KERNEL = "kernels/rmsnorm/fused.py"
CLAIM_FILE = "records/classes/fused-rmsnorm.yaml"
runner = CliRunner()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The worked example KB (a declared experiment, its kernel, a linked claim), committed."""
    repo = commit_all(copy_example(tmp_path / "repo"))
    monkeypatch.chdir(repo)
    return repo


def edit(repo: Path, name: str, old: str, new: str) -> None:
    path = repo / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    git(repo, "add", "-A")


def hook_run(files: list[str]) -> tuple[int, set[tuple[str, str]], dict]:
    result = runner.invoke(app, entry_args("flopkb-validate", files, ("-f", "json")))
    data = json.loads(result.stdout)
    return result.exit_code, {(e["file"], e["rule"]) for e in data["errors"]}, data


def test_the_hook_is_given_declarations_and_kernel_sources() -> None:
    files = re.compile(hook("flopkb-validate")["files"])
    for name in (DECLARATION, KERNEL, "kb/kernels/op/k.cu", CLAIM_FILE):
        assert files.search(name), name
    for name in ("README.md", "kernels/rmsnorm/README.md", "experiments/notes/x.txt"):
        assert not files.search(name), name


def test_a_broken_declaration_is_seen_with_the_claim_it_breaks(repo: Path) -> None:
    edit(repo, DECLARATION, '"rmsnorm.fused:rmsnorm"', '"rmsnorm.fused:nope"')
    code, errors, data = hook_run([DECLARATION])
    assert code == 1, data
    assert errors == {(DECLARATION, "FKB523"), (CLAIM_FILE, "FKB507")}
    fkb507 = next(e for e in data["errors"] if e["rule"] == "FKB507")
    assert "is declared (experiments/rmsnorm-fused-vs-unfused.yaml) but its declaration has " \
        "errors" in fkb507["message"]
    assert "FKB523" in fkb507["message"]


def test_a_kernel_change_that_breaks_a_declaration_is_seen(repo: Path) -> None:
    edit(repo, KERNEL, "def rmsnorm(", "def rmsnorm_renamed(")
    code, errors, data = hook_run([KERNEL])
    assert code == 1, data
    assert errors == {(DECLARATION, "FKB523"), (CLAIM_FILE, "FKB507")}


def test_a_deleted_declaration_is_seen_on_the_claim(repo: Path) -> None:
    git(repo, "rm", "-q", DECLARATION)
    # pre-commit passes no file: the deletion is read from the index
    code, errors, data = hook_run([])
    assert code == 1, data
    assert errors == {(CLAIM_FILE, "FKB507")}
    message = data["errors"][0]["message"]
    assert "is not declared (neither bundled nor in the KB's experiments/)" in message


def test_a_clean_declaration_change_passes(repo: Path) -> None:
    edit(repo, DECLARATION, "time_limit_s: 30", "time_limit_s: 31")
    code, errors, data = hook_run([DECLARATION])
    assert code == 0 and errors == set(), data
    # the declaration's claim was looked at too
    assert data["records"] >= 1


def test_kernels_of_other_code_in_the_repository_are_left_alone(repo: Path) -> None:
    (repo / "tools/kernels").mkdir(parents=True)
    (repo / "tools/kernels/x.py").write_text("print('not the KB')\n")
    git(repo, "add", "-A")
    code, errors, data = hook_run(["tools/kernels/x.py"])
    assert code == 0 and errors == set(), data
