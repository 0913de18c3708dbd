"""Figures README and docs quote inside sentences about the bundled KB equal what the KB holds
(the paragraph-sized ones are generated blocks: tests/unit/test_readme.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from flopkb.kb import load_kb
from flopkb.paths import bundled_root

ROOT = Path(__file__).resolve().parents[2]


def _kb_figures() -> Any:
    spec = importlib.util.spec_from_file_location("kb_figures", ROOT / "bench" / "kb_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(document: str) -> str:
    """The document with every run of whitespace one space (figures may wrap)."""
    return " ".join((ROOT / document).read_text(encoding="utf-8").split())


@pytest.mark.parametrize("document", ["README.md", "docs/validate.md"])
def test_the_count_of_records_yaml_1_1_turns_dates_of(document: str) -> None:
    figure = _kb_figures().dated_records()
    assert re.fullmatch(r"\d+ of the \d+ bundled records", figure)
    assert f"({figure})" in _text(document)


@pytest.mark.parametrize("document", ["README.md", "docs/validate.md"])
def test_the_accepted_schema_versions(document: str) -> None:
    versions = _kb_figures().accepted_versions()
    text = _text(document)
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


def test_no_document_cites_a_file_the_repository_does_not_have() -> None:
    for path in [ROOT / "README.md", *ROOT.glob("docs/*.md")]:
        text = path.read_text(encoding="utf-8")
        document = path.name
        for name in ("CLAIMS.md", "DESIGN.md"):
            assert name not in text or (ROOT / name).exists(), (document, name)
