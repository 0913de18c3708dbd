"""`flopkb init [DIR]`: a new KB that validates clean under --strict, reusing the bundled
quantities; nothing that exists is ever replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.paths import bundled_root

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_init_then_validate_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = tmp_path / "my-kb"
    done = run("init", str(kb))
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[-1].endswith(f"next: cd {kb} && flopkb validate")
    monkeypatch.chdir(kb)
    result = run("validate", "--strict", "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["errors"] == data["warnings"] == []
    assert data["kb"] == {
        "root": str(kb), "bundled": False, "config": str(kb / "flopkb.toml"), "isolated": False
    }
    # the example claim's quantity resolves from the copied bundled quantities
    claims = json.loads(run("claims", "-f", "json").stdout)
    assert [(c["claim"], c["quantity"]) for c in claims] == [
        ("example-elementwise/time-follows-hbm-bandwidth", "hbm_bandwidth")
    ]
    shown = json.loads(run("hw", "show", "h100-sxm", "-f", "json").stdout)
    assert shown["computed"]["ridge_point_bf16"]["value"] is not None


def test_every_bundled_quantity_and_kind_folder_is_there(tmp_path: Path) -> None:
    assert run("init", str(tmp_path)).exit_code == 0
    bundled = sorted(p.name for p in (bundled_root() / "records/quantities").glob("*.yaml"))
    copied = sorted(p.name for p in (tmp_path / "records/quantities").glob("*.yaml"))
    assert copied == bundled and len(copied) >= 14
    for kind in ("classes", "accelerators", "quantities", "sources", "evidence"):
        assert (tmp_path / "records" / kind).is_dir()
    assert (tmp_path / "flopkb.toml").is_file()
    assert (tmp_path / "schema/record.schema.json").is_file()


def test_init_never_replaces_a_file(tmp_path: Path) -> None:
    (tmp_path / "records/quantities").mkdir(parents=True)
    mine = tmp_path / "records/quantities/hbm_bandwidth.yaml"
    mine.write_text("my own words\n", encoding="utf-8")
    config = tmp_path / "flopkb.toml"
    config.write_text("strict = false\n", encoding="utf-8")
    result = run("init", str(tmp_path), "-f", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"records/quantities/hbm_bandwidth.yaml", "flopkb.toml"} <= set(data["kept"])
    assert mine.read_text(encoding="utf-8") == "my own words\n"
    assert config.read_text(encoding="utf-8") == "strict = false\n"
    again = json.loads(run("init", str(tmp_path), "-f", "json").stdout)
    assert again["written"] == [] and len(again["kept"]) == len(data["kept"]) + len(data["written"])


def test_a_record_id_the_kb_has_elsewhere_is_not_added_twice(tmp_path: Path) -> None:
    (tmp_path / "records/drafts").mkdir(parents=True)
    mine = tmp_path / "records/drafts/hbm_bandwidth.yaml"
    mine.write_text("my own hbm_bandwidth\n", encoding="utf-8")
    data = json.loads(run("init", str(tmp_path), "-f", "json").stdout)
    assert "records/quantities/hbm_bandwidth.yaml" in data["kept"]
    assert not (tmp_path / "records/quantities/hbm_bandwidth.yaml").exists()


def test_init_onto_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("x", encoding="utf-8")
    result = run("init", str(target))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "not a folder" in result.stderr
    assert target.read_text(encoding="utf-8") == "x"


@pytest.mark.parametrize("link", ["records", "records/quantities", "records/evidence", "schema"])
def test_init_never_writes_through_a_symlinked_folder(tmp_path: Path, link: str) -> None:
    """issue 27: a `records -> elsewhere` link took sixteen quantity files out of the KB."""
    kb = tmp_path / "kb"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (kb / link).parent.mkdir(parents=True)
    (kb / link).symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = run("init", str(kb))
    assert done.exit_code == 2, done.output
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and "is a symlink" in errors[0], done.stderr
    assert list(elsewhere.iterdir()) == []
    # refused before anything was written anywhere
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_init_writes_a_schema_that_schema_export_check_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    assert run("init", str(kb)).exit_code == 0
    monkeypatch.chdir(kb)
    checked = run("schema", "export", "--check")
    assert checked.exit_code == 0, checked.output
    assert "up to date" in checked.stdout
