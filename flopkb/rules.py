"""The rule catalogue: every code `flopkb validate` reports, its severity and its summary.

The rules are data (rules.yaml beside this module), declared once: the loader and the checks
report findings by code, `--select`, `--ignore` and suppressions check codes against `RULES`, and
docs/rules.md and the SARIF rule list are written from it. Torch-free and check-free, so the
loader can use it without importing the checks (which import the KB, which imports the loader).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from flopkb import budget
from flopkb.findings import Finding, Severity

CATALOGUE = Path(__file__).with_name("rules.yaml")


@dataclass(frozen=True)
class Rule:
    code: str
    severity: Severity
    summary: str


def read_catalogue(path: Path = CATALOGUE) -> dict[str, Rule]:
    """The rules of `path`, by code; `{budget.NAME}` in a summary becomes the limit in force."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return {
        code: Rule(code, Severity(entry["severity"]), entry["summary"].format(budget=budget))
        for code, entry in data.items()
    }


RULES: dict[str, Rule] = read_catalogue()


def finding_of(
    code: str,
    file: str,
    line: int,
    column: int,
    record: str | None,
    message: str,
    hint: str | None = None,
) -> Finding:
    """A finding of rule `code` with the catalogue's severity; `line`/`column` 1-based, 0 for
    the whole file."""
    return Finding(code, RULES[code].severity, file, line, column, record, message, hint)
