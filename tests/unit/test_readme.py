"""README's rule table is the generated one, so a new or renamed rule cannot go undocumented."""

from __future__ import annotations

from pathlib import Path

import flopkb.check  # noqa: F401 - registers every rule
from flopkb.check.base import RULES
from flopkb.report import rules_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_rule_table_is_the_generated_one() -> None:
    text = README.read_text(encoding="utf-8")
    assert rules_markdown().strip() in text
    assert all(f"| {code} |" in text for code in RULES)
