"""The published JSON Schema: generated from the models, committed, valid draft 2020-12."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from flopkb.kb import record_files
from flopkb.load import read_document
from flopkb.schema_export import DRAFT, drift, generate

REPO = Path(__file__).resolve().parents[3]
SCHEMA = REPO / "schema"
VALID = REPO / "tests" / "cases" / "valid" / "small-kb"


def test_committed_schema_matches_the_models() -> None:
    assert drift(SCHEMA) == [], "run `flopkb schema export --force` and commit schema/"


@pytest.mark.parametrize("name", sorted(generate()))
def test_each_file_is_a_draft_2020_12_schema(name: str) -> None:
    schema = json.loads(generate()[name])
    assert schema["$schema"] == DRAFT
    jsonschema.Draft202012Validator.check_schema(schema)


def test_valid_records_pass_the_published_schema() -> None:
    validator = jsonschema.Draft202012Validator(
        json.loads((SCHEMA / "record.schema.json").read_text())
    )
    for path in record_files(VALID):
        data = read_document(path, str(path)).data
        assert list(validator.iter_errors(data)) == [], path


def test_the_schema_rejects_an_unknown_field() -> None:
    validator = jsonschema.Draft202012Validator(
        json.loads((SCHEMA / "record.schema.json").read_text())
    )
    data = read_document(VALID / "records/sources/dao-gu-2024-ssd.yaml", "x").data
    assert data is not None
    assert list(validator.iter_errors({**data, "titel": "x"}))


def test_export_command_writes_and_checks(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from flopkb.cli import app

    runner = CliRunner()
    out = tmp_path / "schema"
    assert runner.invoke(app, ["schema", "export", "--check", "--out", str(out)]).exit_code == 1
    assert runner.invoke(app, ["schema", "export", "--out", str(out)]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(generate())
    assert runner.invoke(app, ["schema", "export", "--check", "--out", str(out)]).exit_code == 0
    (out / "record.schema.json").write_text("{}")
    result = runner.invoke(app, ["schema", "export", "--check", "--out", str(out), "-f", "json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["stale"] == ["record.schema.json"]


def test_every_bundled_experiment_declaration_passes_the_published_schema() -> None:
    validator = jsonschema.Draft202012Validator(
        json.loads((SCHEMA / "experiment.schema.json").read_text())
    )
    import yaml

    declared = sorted((SCHEMA.parent / "experiments").glob("*.yaml"))
    assert declared
    for path in declared:
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))))
        assert errors == [], (path.name, errors[:1])
    assert list(validator.iter_errors({"id": "x", "title": "t", "measures": "m",
                                       "criterion": "c", "sweeps": 1}))
