"""Bringing bundled records into a KB of one's own (issue 27): a bundled accelerator copied by
hand gave 9 FKB301s whose hint pointed at the H100's datasheet; `flopkb add ID` copies it with
what it needs, never replacing a file, and FKB301 names the bundled record and the command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.paths import bundled_root

runner = CliRunner()
BUNDLED = bundled_root() / "records"


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "my-kb"
    assert runner.invoke(app, ["init", str(root)]).exit_code == 0
    monkeypatch.chdir(root)
    return root


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def validate(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["validate", *args, "-f", "json"])
    return result.exit_code, json.loads(result.stdout)


def test_a_copied_bundled_accelerator_is_told_where_its_sources_are(kb: Path) -> None:
    shutil.copy(BUNDLED / "accelerators/h200-sxm.yaml", kb / "records/accelerators")
    code, data = validate()
    assert code == 1
    missing = [e for e in data["errors"] if e["rule"] == "FKB301"]
    assert len(missing) == 9
    for error in missing:
        target = error["message"].split("'")[1]
        assert error["hint"] == (
            f"{target!r} exists in the bundled KB: `flopkb add {target}` brings it in"
        )
        assert "h100" not in error["hint"]


def test_add_brings_a_bundled_accelerator_with_what_it_cites(kb: Path) -> None:
    before = files(kb)
    result = runner.invoke(app, ["add", "h200-sxm", "-f", "json"])
    assert result.exit_code == 0, result.output
    added = json.loads(result.stdout)["added"]
    assert sorted(added) == [
        "records/accelerators/h200-sxm.yaml",
        "records/evidence/ev-calibration-h200-sxm-20261201t153955z.yaml",
        "records/sources/nvidia-h200-datasheet.yaml",
    ]
    after = files(kb)
    # byte for byte, nothing else touched, no temp file left behind
    assert {k: v for k, v in after.items() if k in before} == before
    assert sorted(set(after) - set(before)) == sorted(added)
    for name in added:
        assert after[name] == (BUNDLED / Path(name).relative_to("records")).read_bytes()
    code, data = validate("--strict")
    assert code == 0, data


def test_add_brings_a_measured_rows_evidence_and_its_pictures(kb: Path) -> None:
    result = runner.invoke(app, ["add", "dense-gemm", "-f", "json"])
    assert result.exit_code == 0, result.output
    added = json.loads(result.stdout)["added"]
    assert "records/classes/dense-gemm.yaml" in added
    evidence = [n for n in added if n.startswith("records/evidence/ev-dense-gemm--")]
    assert evidence and any(n.endswith(".png") for n in added)
    code, data = validate("--strict")
    assert code == 0, [e["rule"] + " " + e["message"] for e in data["errors"] + data["warnings"]]


def test_add_never_replaces_a_record_the_kb_has(kb: Path) -> None:
    assert runner.invoke(app, ["add", "h200-sxm"]).exit_code == 0
    edited = kb / "records/accelerators/h200-sxm.yaml"
    edited.write_text(edited.read_text() + "# mine\n")
    before = files(kb)
    result = runner.invoke(app, ["add", "h200-sxm"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "never replaces" in lines[0]
    assert files(kb) == before


def test_add_keeps_the_kbs_own_version_of_a_dependency(kb: Path) -> None:
    # the KB has its own h200 datasheet record: it stays, and is not followed
    own = kb / "records/sources/nvidia-h200-datasheet.yaml"
    shutil.copy(BUNDLED / "sources/nvidia-h200-datasheet.yaml", own)
    own.write_text(own.read_text() + "# edited\n")
    result = runner.invoke(app, ["add", "h200-sxm", "-f", "json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert "nvidia-h200-datasheet" in data["kept"]
    assert own.read_text().endswith("# edited\n")


def test_add_refuses_a_file_in_the_way_before_writing_anything(kb: Path) -> None:
    picture = next(BUNDLED.glob("evidence/ev-dense-gemm--*.png"))
    (kb / "records/evidence" / picture.name).write_bytes(b"mine")
    before = files(kb)
    result = runner.invoke(app, ["add", "dense-gemm"])
    assert result.exit_code == 2
    assert "never replaces a file" in result.stderr
    assert files(kb) == before


def test_add_never_writes_through_a_symlinked_folder(kb: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(kb / "records/sources")
    (kb / "records/sources").symlink_to(elsewhere, target_is_directory=True)
    result = runner.invoke(app, ["add", "h200-sxm"])
    assert result.exit_code == 2 and "is a symlink" in result.stderr
    assert list(elsewhere.iterdir()) == []
    assert not (kb / "records/accelerators/h200-sxm.yaml").exists()


def test_add_of_an_unknown_id_suggests_bundled_ones(kb: Path) -> None:
    result = runner.invoke(app, ["add", "h200-sx"])
    assert result.exit_code == 2
    assert "no record 'h200-sx' in the bundled KB (did you mean h200-sxm" in result.stderr


def test_add_needs_a_kb_of_ones_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    result = runner.invoke(app, ["add", "h200-sxm"])
    assert result.exit_code == 2 and "flopkb init" in result.stderr
    assert list((tmp_path / "empty").iterdir()) == []
