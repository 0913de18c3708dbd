"""FKB532: a claim row that nothing judges, derives or excuses is a warning (a user's KB), and
the bundled KB has none (so `validate --strict` stays clean there)."""

from __future__ import annotations

from pathlib import Path

import yaml

from flopkb.check import run_checks
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from tests.unit.verify_fixtures import write_kb


def _fkb530(root: Path) -> list:
    kb, findings = load_kb(root)
    return [f for f in [*findings, *run_checks(kb)] if f.rule == "FKB532"]


def test_the_bundled_kb_judges_every_claim() -> None:
    assert _fkb530(bundled_root()) == []


def test_a_bare_row_is_a_located_warning_and_each_way_out_clears_it(tmp_path: Path) -> None:
    root = write_kb(tmp_path)
    path = root / "records" / "classes" / "test-class.yaml"
    data = yaml.safe_load(path.read_text())
    row = data["flop"]["hardware_parameters"][0]
    link = row.pop("verify")

    def write(**extra: object) -> None:
        data["flop"]["hardware_parameters"] = [{**row, **extra}]
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    write()
    (found,) = _fkb530(root)
    assert found.severity.value == "warning" and found.record == "test-class"
    assert found.message.startswith(f"test-class/{row['id']}: nothing judges this claim")
    assert found.file.endswith("test-class.yaml") and found.line > 1
    for way_out in ({"verify": {"not_applicable": "needs two GPU models"}}, {"verify": link}):
        write(**way_out)
        assert _fkb530(root) == []
