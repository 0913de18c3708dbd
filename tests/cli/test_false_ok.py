"""No false "ok" (issue 18): what a pull request could hide from `validate --strict`.

A suppression comment in a cited record that does not load, and references to that record; a
pre-commit run that misses what the changed or deleted files break.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import commit_all, git, make_repo
from tests.cli.test_precommit import ROOT, entry_args

runner = CliRunner()
CITED = "records/sources/dao-gu-2024-ssd.yaml"  # cited by records/classes/mamba2-ssd.yaml

BROKEN_CITED = {
    # a YAML syntax error on the line of the comment
    "FKB105": "schema_version: 2\nid: dao-gu-2024-ssd\nkind: source\n"
    "title: a: b  # flopkb: ignore[FKB105]\n",
    # a kind that is not one: the record does not load
    "FKB120": "schema_version: 2\nid: dao-gu-2024-ssd\nkind: sourcex  # flopkb: ignore[FKB120]\n"
    "title: x\n",
}


def strict_json(root: Path, *args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["--kb", str(root), "validate", "--strict", "-f", "json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("code", sorted(BROKEN_CITED))
def test_a_suppression_never_hides_a_record_that_does_not_load(tmp_path: Path, code: str) -> None:
    repo = make_repo(tmp_path, with_git=False)
    (repo / CITED).write_text(BROKEN_CITED[code], encoding="utf-8")
    rc, data = strict_json(repo)
    assert rc == 1 and data["ok"] is False
    rules = {(Path(e["file"]).name, e["rule"]) for e in data["errors"]}
    assert ("dao-gu-2024-ssd.yaml", code) in rules
    # the record citing it is told its source failed to load, not left silent
    refs = [e for e in data["errors"] if e["rule"] == "FKB303"]
    assert refs and all(Path(e["file"]).name == "mamba2-ssd.yaml" for e in refs)
    assert all("dao-gu-2024-ssd" in e["message"] and "failed to load" in e["message"]
               for e in refs)  # fmt: skip


def test_a_reference_to_a_record_that_failed_to_load_cannot_be_suppressed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_git=False)
    (repo / CITED).write_text(BROKEN_CITED["FKB120"], encoding="utf-8")
    cls = repo / "records/classes/mamba2-ssd.yaml"
    text = cls.read_text(encoding="utf-8")
    # every line naming the source gets a suppression of the reference finding
    text = "\n".join(
        f"{line}  # flopkb: ignore[FKB303]" if "dao-gu-2024-ssd" in line else line
        for line in text.splitlines()
    )
    cls.write_text(text + "\n", encoding="utf-8")
    rc, data = strict_json(repo)
    assert rc == 1
    assert any(e["rule"] == "FKB303" for e in data["errors"])


def test_other_suppressions_still_work(tmp_path: Path) -> None:
    # the rule is narrow: a provenance finding on its own line is still suppressible
    repo = make_repo(tmp_path, with_git=False)
    cls = repo / "records/classes/mamba2-ssd.yaml"
    text = cls.read_text(encoding="utf-8")
    old = 'effect: "2-8x faster than Mamba\'s fused associative scan"'
    assert old in text
    cls.write_text(
        text.replace(old, 'effect: "2-8x quicker"  # flopkb: ignore[FKB201]'), encoding="utf-8"
    )
    rc, data = strict_json(repo)
    assert rc == 0, data


BUNDLED = ROOT / "records"
MEASURED = "records/classes/dense-gemm.yaml"  # its row gemm-ruggedness is `basis: measured`
BACKING = sorted(
    f"records/evidence/{p.name}"
    for p in BUNDLED.glob("evidence/ev-dense-gemm--gemm-ruggedness-h200-sxm-*.yaml")
)


def bundled_repo(tmp_path: Path) -> Path:
    """A git repository holding a copy of the bundled records, committed."""
    repo = tmp_path / "repo"
    # the pictures too: evidence lists them, and a listed picture that is missing is FKB514
    shutil.copytree(BUNDLED, repo / "records")
    return commit_all(repo)


def changed_json(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["validate", "--changed", "-f", "json", "--", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def errors_of(data: dict) -> set[tuple[str, str]]:
    return {(e["file"], e["rule"]) for e in data["errors"]}


def test_deleting_the_evidence_behind_a_measured_row_fails_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bundled_repo(tmp_path)
    assert len(BACKING) >= 2  # every run of the claim on the H200
    git(repo, "rm", "-q", *BACKING)
    monkeypatch.chdir(repo)
    rc, data = changed_json()
    assert rc == 1
    assert (MEASURED, "FKB209") in errors_of(data)


def test_editing_the_verdict_of_the_evidence_behind_a_measured_row_fails_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bundled_repo(tmp_path)
    # a verdict edited by hand no longer re-derives from the record's own numbers (FKB510), so the
    # record is not trusted and backs nothing; --changed reports it on the evidence itself
    newest = repo / BACKING[-1]
    text = newest.read_text(encoding="utf-8")
    assert "\nverdict: confirmed\n" in text
    newest.write_text(text.replace("\nverdict: confirmed\n", "\nverdict: refuted\n"))
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    rc, data = changed_json(BACKING[-1])
    assert rc == 1
    assert (BACKING[-1], "FKB510") in errors_of(data)


def test_an_untouched_evidence_file_passes_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bundled_repo(tmp_path)
    monkeypatch.chdir(repo)
    rc, data = changed_json(BACKING[-1])
    assert rc == 0, data
    # the claim record it backs is checked too
    assert data["records"] >= 2


def test_changed_sees_staged_deletions_through_a_symlinked_kb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(repo, target_is_directory=True)
    git(repo, "rm", "-q", CITED)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["--kb", str(link), "validate", "--changed", "-f", "json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {e["rule"] for e in data["errors"]} == {"FKB301"}
    assert data["records"] >= 1


def test_a_deleted_record_with_a_non_utf8_name_never_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    odd = os.fsencode(repo / "records/sources") + b"/odd-\xff.yaml"
    with open(odd, "wb") as handle:
        handle.write(b"schema_version: 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd")
    os.unlink(odd)
    git(repo, "add", "-A")
    git(repo, "rm", "-q", CITED)
    monkeypatch.chdir(repo)
    rc, data = changed_json()
    assert rc == 1
    assert ("records/classes/mamba2-ssd.yaml", "FKB301") in errors_of(data)


def test_a_path_starting_with_a_dash_never_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    make_repo(tmp_path / "kb", with_git=False)
    (repo).mkdir()
    shutil.move(tmp_path / "kb" / "repo", repo / "-kb")
    commit_all(repo)
    monkeypatch.chdir(repo)
    # as pre-commit calls the hook: its entry, then the changed files
    result = runner.invoke(app, entry_args("flopkb-validate", [f"-kb/{CITED}"], ("-f", "json")))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


def test_evidence_naming_a_dropped_claim_row_is_reported(tmp_path: Path) -> None:
    repo = bundled_repo(tmp_path)
    cls = repo / "records/classes/mamba2-ssd.yaml"
    lines = cls.read_text(encoding="utf-8").splitlines()
    at = lines.index("    - id: ssd-vs-fused-scan")
    basis = next(i for i in range(at, at + 12) if lines[i].strip() == "basis: cited")
    # a bad basis drops the row (salvage); the comment must not hide that nor the evidence
    lines[basis] = "      basis: guessed  # flopkb: ignore[FKB121]"
    cls.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rc, data = strict_json(repo)
    assert rc == 1
    assert ("records/classes/mamba2-ssd.yaml", "FKB121") in {
        (str(Path(e["file"]).relative_to(repo)), e["rule"]) for e in data["errors"]
    }
    evidence = [e for e in data["errors"] if e["rule"] == "FKB303"]
    assert evidence and all(
        Path(e["file"]).name.startswith("ev-mamba2-ssd--ssd-vs-fused-scan-") for e in evidence
    )


def test_deleting_an_accelerator_reports_its_evidence_and_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bundled_repo(tmp_path)
    git(repo, "rm", "-q", "records/accelerators/h200-sxm.yaml")
    monkeypatch.chdir(repo)
    rc, data = changed_json()
    assert rc == 1
    found = errors_of(data)
    assert ("records/classes/mamba2-ssd.yaml", "FKB301") in found
    assert any(f.startswith("records/evidence/ev-") and r == "FKB505" for f, r in found)


def test_a_commit_deleting_more_than_can_be_read_gets_a_whole_kb_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bundled_repo(tmp_path)
    git(repo, "rm", "-q", *BACKING)
    monkeypatch.chdir(repo)
    # past the bound, the deleted files' committed versions are not read: every record is shown
    monkeypatch.setattr("flopkb.staged.MAX_COMMITTED_READS", 1)
    rc, data = changed_json()
    assert rc == 1
    assert (MEASURED, "FKB209") in errors_of(data)
    assert data["records"] == len(list((repo / "records").rglob("*.yaml")))
