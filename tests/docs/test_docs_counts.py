"""Figures the docs quote inside sentences about the bundled KB equal what the KB holds (the
paragraph-sized ones are generated blocks: tests/docs/test_generated_pages.py)."""

from __future__ import annotations

import re
from pathlib import Path

from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from tools.docs import kb as kb_figures

ROOT = Path(__file__).resolve().parents[2]


def _text(document: str) -> str:
    """The document with every run of whitespace one space (figures may wrap)."""
    return " ".join((ROOT / document).read_text(encoding="utf-8").split())


def test_the_count_of_records_yaml_1_1_turns_dates_of() -> None:
    figure = kb_figures.dated_records()
    assert re.fullmatch(r"\d+ of the \d+ bundled records", figure)
    assert f"({figure})" in _text("docs/validate.md")


def test_the_accepted_schema_versions() -> None:
    versions = kb_figures.accepted_versions()
    text = _text("docs/validate.md")
    assert f"({versions}" in text
    # no other list of versions left behind
    assert "(1 and 2)" not in text


def test_the_kb_table_of_docs_kb_counts_each_kind() -> None:
    kb, _ = load_kb(bundled_root())
    text = (ROOT / "docs/kb.md").read_text(encoding="utf-8")
    row = r"^\| (classes|accelerators|quantities|sources)\b[^|]*\| (\d+) \|"
    counts = dict(re.findall(row, text, re.MULTILINE))
    assert {k: int(v) for k, v in counts.items()} == {
        "classes": len(kb.classes),
        "accelerators": len(kb.accelerators),
        "quantities": len(kb.quantities),
        "sources": len(kb.sources),
    }
