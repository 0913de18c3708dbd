"""The rule catalogue (flopkb/rules.yaml): each code declared once, every code the source reports
is in it, every code in it is reported somewhere, limits written in force."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from flopkb import budget
from flopkb.check.plausibility import SPEC_SCALE
from flopkb.findings import Severity
from flopkb.rules import CATALOGUE, RULES, finding_of, read_catalogue

SOURCE = Path(__file__).resolve().parents[2] / "flopkb"
CODE = re.compile(r"FKB\d{3}")


def _reported_codes() -> dict[str, list[str]]:
    """Each rule code that flopkb's Python source holds as a string of its own (not inside a
    longer text, such as a template's example), with the files."""
    found: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and CODE.fullmatch(str(node.value)):
                found.setdefault(node.value, []).append(path.relative_to(SOURCE).as_posix())
    return found


def test_each_code_is_declared_once_in_order() -> None:
    declared = re.findall(r"^(FKB\d{3}):", CATALOGUE.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(declared) == len(set(declared)) == len(RULES)
    assert declared == sorted(declared)


def test_every_reported_code_is_catalogued() -> None:
    unknown = {code: files for code, files in _reported_codes().items() if code not in RULES}
    assert not unknown


def test_every_catalogued_code_is_reported_somewhere() -> None:
    assert sorted(set(RULES) - set(_reported_codes())) == []


def test_summaries_are_one_line_with_the_limits_in_force() -> None:
    for code, rule in RULES.items():
        assert rule.code == code and isinstance(rule.severity, Severity)
        assert rule.summary and "\n" not in rule.summary and "{" not in rule.summary, code
    assert f"({budget.MAX_NUMBER_CHARS} characters)" in RULES["FKB114"].summary
    assert f"({budget.MAX_KEYS} keys, {budget.MAX_ITEMS} items)" in RULES["FKB115"].summary
    assert f"({budget.MAX_FINDINGS_PER_FILE})" in RULES["FKB116"].summary
    assert f"{budget.CLOCK_SKEW.days} day" in RULES["FKB508"].summary
    # written as text in the catalogue: it names the check's constant, which must agree
    assert f"above {SPEC_SCALE:.0e} or below {1 / SPEC_SCALE:.0e}" in RULES["FKB423"].summary


def test_a_finding_takes_its_rules_severity() -> None:
    assert finding_of("FKB504", "f.yaml", 1, 1, "r", "m").severity is Severity.warning
    assert finding_of("FKB603", "f.yaml", 1, 1, "r", "m").severity is Severity.info
    with pytest.raises(KeyError):
        finding_of("FKB000", "f.yaml", 1, 1, "r", "m")


def test_a_limit_in_a_summary_is_filled_from_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("FKB999:\n  severity: info\n  summary: at most {budget.MAX_KEYS} keys\n")
    assert read_catalogue(path)["FKB999"].summary == f"at most {budget.MAX_KEYS} keys"
