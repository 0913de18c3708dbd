"""Figures the docs quote inside sentences about the bundled KB: inline generated blocks, so they
equal what the KB holds (tests/docs/test_generated_pages.py holds every block to the generator)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from tools.docs import kb as kb_figures
from tools.docs import pages
from tools.docs.markers import regenerate
from tools.docs.sources import MissingFigure, Sources

ROOT = Path(__file__).resolve().parents[2]


def _text(document: str) -> str:
    """The document with every run of whitespace one space (figures may wrap)."""
    return " ".join((ROOT / document).read_text(encoding="utf-8").split())


def test_the_count_of_records_yaml_1_1_turns_dates_of() -> None:
    # an inline generated block: tests/docs/test_generated_pages.py holds it to the generator
    figure = kb_figures.dated_records()
    assert re.fullmatch(r"\d+ of the \d+ bundled records", figure)
    assert f"(<!-- figures:dated-records -->{figure}<!-- /figures:dated-records -->)" in _text(
        "docs/validate.md")


def test_the_accepted_schema_versions() -> None:
    versions = kb_figures.accepted_versions()
    text = _text("docs/validate.md")
    assert f"(<!-- figures:schema-versions -->{versions}<!-- /figures:schema-versions -->)" in text
    # no other list of versions left behind
    assert "(1 and 2)" not in text


def test_an_inline_block_follows_the_records(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "records", tmp_path / "records")
    before = kb_figures.block_dated_records(Sources(root=tmp_path))
    dated, total = map(int, re.findall(r"\d+", before))
    # one more record, with a date: both counts move, and the sentence with them
    (tmp_path / "records/sources/extra.yaml").write_text("kind: source\nretrieved: 2026-12-04\n",
                                                       encoding="utf-8")
    after = kb_figures.block_dated_records(Sources(root=tmp_path))
    assert after == f"{dated + 1} of the {total + 1} bundled records"
    page = "(<!-- figures:dated-records -->old<!-- /figures:dated-records -->)"
    assert regenerate(page, Sources(root=tmp_path), pages.BLOCKS) == (
        f"(<!-- figures:dated-records -->{after}<!-- /figures:dated-records -->)")


def test_an_inline_block_refuses_text_that_spans_lines() -> None:
    page = "see (<!-- figures:two -->x<!-- /figures:two -->)"
    with pytest.raises(MissingFigure, match="inside a sentence"):
        regenerate(page, Sources(), {"two": lambda _: "a\nb"})


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
