"""docs/rules.md, the one table of rule codes, written whole from the rule catalogue
(flopkb/rules.yaml, `flopkb.rules.RULES`): a table per code family, each under its own heading
so that other pages can link to a family (`rules.md#fkb5xx-evidence`)."""

from __future__ import annotations

from flopkb.rules import RULES

from .fmt import table

PATH = "docs/rules.md"
# The hundreds digit of a code names its family (flopkb/rules.yaml groups them the same way).
FAMILIES = {
    "1": "loading and structure",
    "2": "provenance",
    "3": "references",
    "4": "formulas, units and hardware",
    "5": "evidence and experiments",
    "6": "the graph",
    "7": "suppressions",
    "9": "architecture records",
}
INTRO = """\
# Rule codes of `flopkb validate`

<!-- Written by `python -m tools.docs` from flopkb/rules.yaml; edit the catalogue, not this. -->

Every finding names one of these codes. The codes are stable: a code is never reused for another
rule. Severities: `error` fails a run, `warning` fails under `--strict`, `info` is reported and
never fails. How to select, ignore or suppress them, and how the provenance rules are read:
[validate.md](validate.md). Loading and structure findings (FKB1xx) and FKB303 are never
suppressed by an inline comment.
"""


def family_heading(digit: str) -> str:
    return f"FKB{digit}xx {FAMILIES[digit]}"


def page() -> str:
    """The whole of docs/rules.md."""
    by_family: dict[str, list[list[str]]] = {}
    for code in sorted(RULES):
        rule = RULES[code]
        digit = code[3]
        if digit not in FAMILIES:
            raise LookupError(f"{code}: no family for FKB{digit}xx in tools/docs/rules.py")
        by_family.setdefault(digit, []).append(
            [code, rule.severity.value, rule.summary.replace("|", "\\|")])
    parts = [INTRO]
    for digit in sorted(by_family):
        parts.append(f"## {family_heading(digit)}\n\n"
                     + table(["code", "severity", "rule"], by_family[digit]))
    return "\n".join(parts)
