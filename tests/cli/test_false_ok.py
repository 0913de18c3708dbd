"""No false "ok" (issue 18): what a pull request could hide from `validate --strict`.

A suppression comment in a cited record that does not load, and references to that record; a
pre-commit run that misses what the changed or deleted files break.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import make_repo

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
