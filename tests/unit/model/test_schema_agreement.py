"""Schema = validator: the exported JSON Schema and flopkb agree on every structural case.

The corpus is every record file of tests/cases (valid and invalid) and of the bundled KB, plus
probes built here (values YAML 1.2 core reads as text or numbers where the other is expected).
Each file is read the YAML 1.2 core way (flopkb's loader: dates stay strings, `no` stays a
string) and judged twice: by flopkb (any finding of the structural rules) and by jsonschema
with format assertion on (as ajv-formats and check-jsonschema assert them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flopkb.kb import record_files
from flopkb.load import Limits, read_document
from flopkb.model import ACCEPTED_SCHEMA_VERSIONS
from flopkb.paths import bundled_root
from flopkb.schema_export import generate
from flopkb.validate import validate

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "tests" / "cases"
SCHEMA = json.loads(generate()["record.schema.json"])
VALIDATOR = jsonschema.Draft202012Validator(
    SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
)
# the rules a JSON Schema can state: kind, types and forms, fields, ids, versions
STRUCTURAL = {"FKB117", "FKB120", "FKB121", "FKB122", "FKB123", "FKB124", "FKB128", "FKB129"}
KBS = [
    *sorted(p for p in (CASES / "valid").iterdir() if p.is_dir()),
    *sorted(p for p in (CASES / "invalid").iterdir() if p.is_dir()),
    bundled_root(),
]


def judged(kb: Path) -> list[tuple[str, bool, bool]]:
    """(file, flopkb says structurally valid, the schema says valid) for each file that loads."""
    findings = defaultdict(set)
    for f in validate(kb).findings:
        findings[os.path.abspath(f.file)].add(f.rule)
    out = []
    for path in record_files(kb):
        doc = read_document(path, str(path), Limits())
        if doc.data is None or doc.findings:
            continue  # the loader refused it (syntax, size, NaN, ...): no document to judge
        ours = not (findings[os.path.abspath(path)] & STRUCTURAL)
        out.append((str(path), ours, VALIDATOR.is_valid(doc.data)))
    return out


@pytest.mark.parametrize("kb", KBS, ids=lambda p: p.name)
def test_flopkb_and_the_schema_agree(kb: Path) -> None:
    assert [r for r in judged(kb) if r[1] != r[2]] == []


def test_the_corpus_has_both_verdicts() -> None:
    rows = [r for kb in KBS[:-1] for r in judged(kb)]
    assert any(not ours for _, ours, _ in rows) and any(ours for _, ours, _ in rows)


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _leaves(v, (*path, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _leaves(v, (*path, i))]
    return [path]


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


# what YAML 1.2 core may hand over where another type is expected: numbers written as text,
# booleans, dates and words as text, empty values, containers
PROBES = ["3.5", "7", "yes", "true", "", 0, 1.5, 2.0, True, None, [], {}, "2026-10-05", "x/y", "A"]
PROBED = [
    *record_files(CASES / "valid" / "small-kb"),
    bundled_root() / "records/sources/dao-gu-2024-ssd.yaml",
    bundled_root() / "records/evidence/ev-calibration-h200-sxm-20261130t034836z.yaml",
]


@pytest.mark.parametrize("path", PROBED, ids=lambda p: p.name)
def test_probes_agree(path: Path) -> None:
    """Every leaf of the record replaced by every probe value: flopkb and the schema agree."""
    from flopkb.load.structure import to_record

    doc = read_document(path, str(path), Limits())
    base = doc.data
    disagree = []
    for leaf in _leaves(base):
        for probe in PROBES:
            data = json.loads(json.dumps(base))
            _set(data, leaf, probe)
            doc.data = data
            record, findings = to_record(doc, path.stem, Limits())
            ours = not findings and record is not None
            ours = ours and record.schema_version in ACCEPTED_SCHEMA_VERSIONS
            if ours != VALIDATOR.is_valid(data):
                disagree.append((leaf, probe, ours))
    assert disagree == []


# The JSON Schema 2020-12 vocabularies (core, applicator, unevaluated, validation, meta-data,
# format-annotation, content): anything else is a keyword only one tool knows.
STANDARD = {
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
    "$comment", "$defs", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
    "dependentSchemas", "prefixItems", "items", "contains", "properties", "patternProperties",
    "additionalProperties", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "dependentRequired", "title", "description", "default", "deprecated", "readOnly",
    "writeOnly", "examples", "format", "contentEncoding", "contentMediaType", "contentSchema",
}  # fmt: skip
_NAMED = {"properties", "patternProperties", "$defs", "dependentSchemas"}
_ONE = {"not", "if", "then", "else", "items", "contains", "additionalProperties",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}  # fmt: skip
_MANY = {"allOf", "anyOf", "oneOf", "prefixItems"}


def keywords(schema: Any) -> set[str]:
    """Every keyword used anywhere in `schema` (names of properties and $defs excluded)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key in _NAMED:
            found |= {k for sub in value.values() for k in keywords(sub)}
        elif key in _ONE:
            found |= keywords(value)
        elif key in _MANY:
            found |= {k for sub in value for k in keywords(sub)}
    return found


@pytest.mark.parametrize("name", sorted(generate()))
def test_only_standard_keywords(name: str) -> None:
    schema = json.loads(generate()[name])
    assert keywords(schema) - STANDARD == set()


def test_the_keyword_check_can_fail() -> None:
    assert keywords({"oneOf": [{"discriminator": {}}], "properties": {"ge": {"ge": 1}}}) == {
        "oneOf", "discriminator", "properties", "ge"
    }


# experiment.schema.json describes declarations (experiments/), not records: no schema_version
@pytest.mark.parametrize("name", sorted(n for n in generate() if n != "experiment.schema.json"))
def test_schema_versions_are_the_accepted_ones(name: str) -> None:
    schema = json.loads(generate()[name])
    found = [
        d["properties"]["schema_version"]["enum"]
        for d in [schema, *schema.get("$defs", {}).values()]
        if "schema_version" in d.get("properties", {})
    ]
    assert found and all(v == sorted(ACCEPTED_SCHEMA_VERSIONS) for v in found)


def test_errors_name_the_fields_of_the_kind() -> None:
    """The union is chosen by `kind`: a bad basis is reported at the basis, not as a mismatch
    with every other kind."""
    doc = read_document(CASES / "valid/small-kb/records/classes/mamba2-ssd.yaml", "x", Limits())
    data = doc.data
    data["flop"]["hardware_parameters"][0]["basis"] = "guessed"
    errors = list(VALIDATOR.iter_errors(data))
    paths = {tuple(e.absolute_path) for e in jsonschema.exceptions.best_match(errors).context or []}
    best = jsonschema.exceptions.best_match(VALIDATOR.iter_errors(data))
    assert tuple(best.absolute_path) == ("flop", "hardware_parameters", 0, "basis")
    assert ("kind",) not in paths
    data = {"schema_version": 2, "kind": "source", "id": "x", "title": "t", "titel": "t"}
    messages = [e.message for e in VALIDATOR.iter_errors(data)]
    assert any("'titel' was unexpected" in m for m in messages)
    assert not any("accelerator" in m or "prose" in m for m in messages)


def test_check_jsonschema_accepts_the_schema_and_the_bundled_records() -> None:
    if importlib.util.find_spec("check_jsonschema") is None:
        pytest.skip("check-jsonschema is not installed (a dev dependency)")
    tool = [sys.executable, "-m", "check_jsonschema"]
    files = sorted(str(p) for p in record_files(bundled_root()))
    schemas = sorted(str(p) for p in (ROOT / "schema").glob("*.schema.json"))
    meta = subprocess.run([*tool, "--check-metaschema", *schemas], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert meta.returncode == 0, meta.stdout + meta.stderr
    done = subprocess.run(
        [*tool, "--schemafile", str(ROOT / "schema/record.schema.json"), *files],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # and a structural mistake fails it too
    bad = CASES / "invalid" / "wrong-type"
    wrong = [str(p) for p in record_files(bad)]
    done = subprocess.run(
        [*tool, "--schemafile", str(ROOT / "schema/record.schema.json"), *wrong],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1


AJV = """
const Ajv2020 = require("ajv/dist/2020");
const addFormats = require("ajv-formats");
const fs = require("fs");
const [schemaFile, instancesFile] = process.argv.slice(2);
const ajv = new Ajv2020({strict: true, allErrors: true});
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaFile, "utf8")));
const verdicts = JSON.parse(fs.readFileSync(instancesFile, "utf8")).map((d) => validate(d));
process.stdout.write(JSON.stringify(verdicts));
"""


def test_ajv_strict_draft_2020(tmp_path: Path) -> None:
    """ajv in strict mode compiles every schema file and judges records as jsonschema does.
    Needs node and ajv, ajv-formats: `npm install ajv ajv-formats` in a folder named by
    FLOPKB_NODE_PATH (its node_modules); skipped otherwise."""
    node = shutil.which("node")
    modules = os.environ.get("FLOPKB_NODE_PATH", "")
    env = {**os.environ, "NODE_PATH": modules}
    if node is None or subprocess.run(
        [node, "-e", "require('ajv/dist/2020'); require('ajv-formats')"], env=env,
        capture_output=True, timeout=60,
    ).returncode:  # fmt: skip
        pytest.skip("needs node with ajv and ajv-formats (FLOPKB_NODE_PATH=<node_modules>)")
    script = tmp_path / "check.js"
    script.write_text(AJV)
    data = []
    for kb in KBS:
        for path in record_files(kb):
            doc = read_document(path, str(path), Limits())
            if doc.data is not None and not doc.findings:
                data.append(doc.data)
    instances = tmp_path / "instances.json"
    instances.write_text(json.dumps(data))
    expected = [VALIDATOR.is_valid(d) for d in data]
    for name, text in generate().items():
        (tmp_path / name).write_text(text)
        done = subprocess.run([node, str(script), str(tmp_path / name), str(instances)],
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        if name == "record.schema.json":
            assert json.loads(done.stdout) == expected
            assert True in expected and False in expected
