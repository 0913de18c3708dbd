"""Findings -> text for people, JSON for scripts, GitHub workflow annotations and SARIF for CI.

Text, annotations and SARIF messages show what records and file names hold through
`flopkb.escape.visible` (control and bidi characters escaped, `##[` defused; the text report's
lines are also guarded against a leading `::`); JSON carries every value in full, and both JSON
and SARIF pass through `guard_json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from flopkb import __version__
from flopkb.escape import guard_json, guard_lines, visible
from flopkb.findings import Finding, Severity
from flopkb.rules import RULES
from flopkb.validate import ValidationResult

# the words people and tools (editors' problem matchers, SARIF) use for the three severities
LEVEL = {Severity.error: "error", Severity.warning: "warning", Severity.info: "note"}


def text_line(f: Finding) -> str:
    """`file:line:col: SEVERITY: CODE [record] message (hint: ...)`, severity error|warning|note."""
    record = f" [{visible(f.record)}]" if f.record else ""
    hint = f" (hint: {visible(f.hint)})" if f.hint else ""
    return guard_lines(
        f"{visible(f.file)}:{f.line}:{f.column}: {LEVEL[f.severity]}: {visible(f.rule)}{record} "
        f"{visible(f.message)}{hint}"
    )


def format_text(result: ValidationResult) -> str:
    lines = [text_line(f) for f in result.findings]
    n_err, n_warn, n_note = len(result.errors), len(result.warnings), len(result.notes)
    status = "ok" if result.ok else "failed"
    notes = f", {n_note} note{'s' * (n_note != 1)}" if n_note else ""
    lines.append(
        f"{status}: {n_err} error{'s' * (n_err != 1)}, {n_warn} warning{'s' * (n_warn != 1)}"
        f"{notes} in {result.records} record file{'s' * (result.records != 1)}"
        + (" (--strict: warnings fail)" if result.strict and n_warn else "")
    )
    return "\n".join(lines) + "\n"


def format_json(result: ValidationResult) -> str:
    return guard_json(json.dumps(result.as_dict(), indent=2)) + "\n"


def _escape_data(text: str) -> str:
    # GitHub's own escaping of command data; `visible` has already turned CR and LF into `\r`
    # and `\n` text, so a message can never end the command's line early
    return visible(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(f: Finding) -> str:
    """`::error file=...,line=...,col=...,title=CODE::message` (workflow command escaping)."""
    props = [f"file={_escape_property(f.file)}"]
    if f.line:
        props += [f"line={f.line}", f"col={f.column}"]
    props.append(f"title={_escape_property(f.rule)}")
    record = f"[{f.record}] " if f.record else ""
    hint = f" (hint: {f.hint})" if f.hint else ""
    # GitHub's workflow commands are error, warning and notice
    command = "notice" if f.severity.value == "info" else f.severity.value
    return f"::{command} {','.join(props)}::{_escape_data(record + f.message + hint)}"


def format_github(result: ValidationResult) -> str:
    return "".join(github_line(f) + "\n" for f in result.findings)


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(file: str) -> str:
    """An artifact URI: a relative path stays relative (GitHub resolves it against the checkout)."""
    path = Path(file)
    return path.as_uri() if path.is_absolute() else quote(path.as_posix())


def sarif(result: ValidationResult) -> dict[str, Any]:
    """SARIF 2.1.0: one run, every rule of flopkb described once, one result per finding."""
    codes = sorted(RULES)
    index = {code: i for i, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "shortDescription": {"text": RULES[code].summary},
            "defaultConfiguration": {"level": LEVEL[RULES[code].severity]},
        }
        for code in codes
    ]
    results = []
    for f in result.findings:
        location: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.file) if f.file else "."}}
        if f.line:
            location["region"] = {"startLine": f.line, "startColumn": max(f.column, 1)}
        text = (f"[{f.record}] " if f.record else "") + f.message
        entry: dict[str, Any] = {
            "ruleId": f.rule,
            "level": LEVEL[f.severity],
            # the message is what code scanning shows people: escaped as text output is
            "message": {"text": visible(text + (f" (hint: {f.hint})" if f.hint else ""))},
            "locations": [{"physicalLocation": location}],
        }
        if f.rule in index:
            entry["ruleIndex"] = index[f.rule]
        results.append(entry)
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "flopkb",
                "version": __version__,
                "rules": rules,
            }
        },
        "results": results,
        "properties": {"kb": result.kb, "ok": result.ok, "records": result.records},
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def format_sarif(result: ValidationResult) -> str:
    return guard_json(json.dumps(sarif(result), indent=2)) + "\n"


FORMATTERS = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
    "sarif": format_sarif,
}
