"""Every bundled record (and every evidence file verify writes) starts with the line that lets
editors check it against the published schema."""

from __future__ import annotations

import shutil
from pathlib import Path

from flopkb.evidence import store as ev_io
from flopkb.kb import load_kb, record_files
from flopkb.paths import bundled_root
from flopkb.schema_export import HEADER_PREFIX, schema_header


def test_every_bundled_record_names_the_schema() -> None:
    files = record_files(bundled_root())
    assert len(files) > 50
    for path in files:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(HEADER_PREFIX), path
        target = (path.parent / first[len(HEADER_PREFIX) :]).resolve()
        assert target == (bundled_root() / "schema" / "record.schema.json").resolve(), path


def test_verify_writes_the_line_too(tmp_path: Path) -> None:
    shutil.copytree(bundled_root() / "schema", tmp_path / "kb/schema")
    kb, _ = load_kb(bundled_root())
    record = next(iter(kb.evidence.values()))
    folder = tmp_path / "kb/records/evidence"
    folder.mkdir(parents=True)
    path = ev_io.write_evidence(record, folder)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"{HEADER_PREFIX}../../schema/record.schema.json\n")
    assert text[text.index("\n") + 1 :] == ev_io.to_yaml(record)
    # outside any KB with a schema: no line pointing nowhere
    assert schema_header(Path("/") / "x.yaml") == ""
