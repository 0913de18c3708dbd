"""`flopkb extract`: pasteable YAML of new candidate rows; JSON equals the library's result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.extract import extract_record, propose
from flopkb.grammar.text import normalise
from flopkb.kb import load_kb
from flopkb.paths import bundled_root

runner = CliRunner()
KB = ["--kb", str(bundled_root())]


def test_yaml_is_pasteable_rows() -> None:
    result = runner.invoke(app, [*KB, "extract", "mamba2-ssd", "--all"])
    assert result.exit_code == 0, result.output
    rows = yaml.safe_load(result.stdout)
    assert rows and all(r["basis"] == "unverified" for r in rows)


def test_rows_the_record_already_quotes_are_left_out() -> None:
    kb, _ = load_kb(bundled_root())
    record = kb.classes["mamba2-ssd"]
    quoted = [normalise(r.effect) for r in record.flop.hardware_parameters]
    default = runner.invoke(app, [*KB, "extract", "mamba2-ssd"])
    assert default.exit_code == 0, default.output
    rows = yaml.safe_load(default.stdout)
    # pasting what extract prints never repeats a sentence a row of the record already quotes
    for row in rows:
        assert not any(q in normalise(row["effect"]) for q in quoted), row
    n_left_out = len(propose(record)) - len(rows)
    assert n_left_out > 0
    head = f"# {n_left_out} more candidates repeat sentences its rows already quote"
    assert head in default.stdout
    # --all shows them too, commented out (the pasteable part is unchanged) and naming the row
    shown = runner.invoke(app, [*KB, "extract", "mamba2-ssd", "--all"])
    assert yaml.safe_load(shown.stdout) == rows
    assert "# already quoted by row ssd-vs-fused-scan:" in shown.stdout
    assert shown.stdout.count("#   - id: ") == n_left_out


def test_json_equals_library() -> None:
    result = runner.invoke(app, [*KB, "extract", "samba", "--format", "json"])
    assert result.exit_code == 0, result.output
    kb, findings = load_kb(bundled_root())
    expected = extract_record(kb, findings, "samba").as_dict()
    assert json.loads(result.stdout) == expected
    assert expected["valid"] and expected["problems"] == []
    assert {q["quoted_by"][0] for q in expected["already_quoted"]} >= {"prompt-throughput"}


def test_unknown_record_exits_2() -> None:
    result = runner.invoke(app, [*KB, "extract", "mamba3"])
    assert result.exit_code == 2
    assert "no class record" in result.stderr


def test_a_record_of_another_kind_exits_2_saying_its_kind() -> None:
    result = runner.invoke(app, [*KB, "extract", "h200-sxm"])
    assert result.exit_code == 2
    assert "'h200-sxm' is an accelerator record, not a class record" in result.stderr


def _broken_kb(tmp_path: Path, record: str, edit: str) -> list[str]:
    root = tmp_path / "kb"
    shutil.copytree(bundled_root() / "records", root / "records")
    path = root / "records" / "classes" / f"{record}.yaml"
    text = path.read_text()
    broken = edit if edit.startswith("id:") else text.replace("kind: ", f"{edit}\nkind: ", 1)
    path.write_text(broken)
    return ["--kb", str(root)]


def test_a_record_that_fails_the_schema_is_still_read_and_its_errors_shown(
    tmp_path: Path,
) -> None:
    kb = _broken_kb(tmp_path, "mamba2-ssd", "colour: blue")
    result = runner.invoke(app, [*kb, "extract", "mamba2-ssd"])
    assert result.exit_code == 1, result.output
    assert "no class record" not in result.stderr
    assert "mamba2-ssd does not validate (1 finding; its prose was read" in result.stderr
    assert "FKB122 [mamba2-ssd] colour: unknown field 'colour'" in result.stderr
    # the rows were read from the YAML as written: the same new candidates as the valid record
    valid = runner.invoke(app, [*KB, "extract", "mamba2-ssd"])
    assert yaml.safe_load(result.stdout) == yaml.safe_load(valid.stdout)
    as_json = runner.invoke(app, [*kb, "extract", "mamba2-ssd", "--format", "json"])
    payload = json.loads(as_json.stdout)
    assert payload["valid"] is False and payload["problems"][0]["rule"] == "FKB122"


def test_a_record_with_no_readable_prose_says_so(tmp_path: Path) -> None:
    kb = _broken_kb(tmp_path, "samba", "id: [\n")
    result = runner.invoke(app, [*kb, "extract", "samba"])
    assert result.exit_code == 1
    assert "# no prose could be read from samba" in result.stdout
    assert "FKB105" in result.stderr


def test_a_record_that_breaks_a_provenance_rule_shows_the_finding(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    shutil.copytree(bundled_root() / "records", root / "records")
    path = root / "records" / "classes" / "jamba.yaml"
    path.write_text(path.read_text().replace("8x smaller KV cache", "8x tinier KV cache", 1))
    result = runner.invoke(app, ["--kb", str(root), "extract", "jamba"])
    assert result.exit_code == 1
    assert "jamba does not validate" in result.stderr and "FKB201 [jamba]" in result.stderr


def test_notes_are_not_problems() -> None:
    # int8-gemm's INT4 row is not applicable on Hopper (an FKB603 note): nothing is wrong with it
    result = runner.invoke(app, [*KB, "extract", "int8-gemm", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["problems"] == [] and result.stderr == ""
