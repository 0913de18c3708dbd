"""Outputs for machines and people: SARIF, JSON errors, one-line usage errors, severities in
text, colour, --version, completion, an example in every --help, tables that keep ids whole."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

from flopkb import __version__
from flopkb.cli import app
from flopkb.paths import bundled_root

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"
SARIF_SUBSET = ROOT / "tests" / "data" / "sarif-2.1.0-subset.schema.json"
KB = ["--kb", str(bundled_root())]
runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


def _sarif_schemas() -> list[dict]:
    schemas = [json.loads(SARIF_SUBSET.read_text())]
    official = os.environ.get("FLOPKB_SARIF_SCHEMA")
    if official:  # a copy of oasis-tcs/sarif-spec Schemata/sarif-schema-2.1.0.json
        schemas.append(json.loads(Path(official).read_text()))
    return schemas


@pytest.mark.parametrize(
    "case", ["effect-not-verbatim", "wrong-folder", "nul-byte", "unknown-field", "missing-field"]
)
def test_sarif_is_valid_and_carries_every_finding(case: str) -> None:
    folder = CASES / "invalid" / case
    result = run("validate", str(folder), "--format", "sarif")
    log = json.loads(result.stdout)
    for schema in _sarif_schemas():
        jsonschema.validate(log, schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    as_json = json.loads(run("validate", str(folder), "--format", "json").stdout)
    findings = as_json["errors"] + as_json["warnings"] + as_json["notes"]
    results = log["runs"][0]["results"]
    assert len(results) == len(findings) > 0
    levels = {"error": "error", "warning": "warning", "info": "note"}
    assert sorted((r["ruleId"], r["level"]) for r in results) == sorted(
        (f["rule"], levels[f["severity"]]) for f in findings
    )
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    assert result.exit_code == (0 if as_json["ok"] else 1)


def test_sarif_schema_subset_refuses_what_sarif_refuses() -> None:
    """The test schema can fail: a log with a bad level or a 0 line is refused."""
    log = json.loads(run("validate", str(CASES / "invalid" / "new-figure"), "-f", "sarif").stdout)
    schema = _sarif_schemas()[0]
    bad_level = json.loads(json.dumps(log))
    bad_level["runs"][0]["results"][0]["level"] = "info"
    bad_line = json.loads(json.dumps(log))
    bad_line["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    for bad in (bad_level, bad_line, {**log, "version": "2.0.0"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--bogus"],
        ["validate", "--format", "xml"],
        ["validate", "/no/such/path"],
        ["validate", "--max-bytes", "0"],
        ["claims", "--basis", "guessed"],
        ["hw", "show"],
        ["hw", "show", "no-such-part"],
        ["graph", "affects"],
        ["graph", "why", "x", "--on"],
        ["schema", "export", "--bogus"],
        ["nosuchcommand"],
    ],
)
def test_every_usage_error_is_one_line_or_one_json_document(args: list[str]) -> None:
    result = run(*KB, *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopkb: error: "), result.stderr
    # `--format json` right after the command (a later --format would override it)
    cut = 2 if args[0] in ("graph", "hw", "schema") else 1
    as_json = run(*KB, *args[:cut], "--format", "json", *args[cut:])
    assert as_json.exit_code == 2
    assert as_json.stderr == ""
    document = json.loads(as_json.stdout)
    assert document["ok"] is False and document["error"]["exit_code"] == 2
    assert document["error"]["message"]


def test_text_findings_show_their_severity() -> None:
    out = run("validate", str(CASES / "invalid" / "wrong-folder")).stdout
    assert re.search(r":\d+:\d+: warning: FKB126 ", out)
    out = run("validate", str(CASES / "invalid" / "new-figure")).stdout
    assert re.search(r":\d+:\d+: error: FKB202 ", out)
    out = run("validate", str(bundled_root())).stdout
    assert re.search(r":\d+:\d+: note: FKB603 ", out)


def test_colour_follows_no_color_and_the_flag() -> None:
    args = [*KB, "hw", "show", "h100-sxm"]
    ansi = "\x1b["
    assert ansi in run(*args, env={"FORCE_COLOR": "1"}).stdout
    assert ansi not in run(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert ansi not in run("--color", "never", *args[0:], env={"FORCE_COLOR": "1"}).stdout
    assert ansi in run("--color", "always", *args).stdout


def test_version() -> None:
    result = run("--version")
    assert (result.exit_code, result.stdout) == (0, f"flopkb {__version__}\n")


def test_shell_completion_is_offered() -> None:
    result = run("--show-completion", "bash")
    assert result.exit_code == 0
    assert "_FLOPKB_COMPLETE=complete_bash" in result.stdout
    assert "--install-completion" in run("--help").stdout


def command_paths(group: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path below the click group `group` (the root's is ()), depth first."""
    out = [path]
    for name, sub in getattr(group, "commands", {}).items():
        out += command_paths(sub, (*path, name))
    return out


@pytest.mark.parametrize("path", command_paths(typer.main.get_command(app)), ids=" ".join)
def test_every_help_has_an_example(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0
    assert re.search(r"^  Examples?:\n +flopkb ", result.stdout, re.M), result.stdout
    # and no rich boxes anywhere in help
    assert "╭" not in result.stdout and "│" not in result.stdout


def _claim_ids() -> list[str]:
    return [c["claim"] for c in json.loads(run(*KB, "claims", "-f", "json").stdout)]


def broken(ids: list[str], text: str) -> list[str]:
    """Every `record/` in `text` followed by something that is not a whole claim id: on the
    same line, or folded after the `/` onto the next line in the same column."""
    heads = {i.split("/")[0] for i in ids}
    lines = text.splitlines()
    bad = []
    for n, line in enumerate(lines):
        for match in re.finditer(r"(?<![a-z0-9_-])([a-z0-9][a-z0-9_-]*)/", line):
            if match.group(1) not in heads:
                continue
            row = re.match(r"[a-z0-9_-]*", line[match.end() :]).group(0)
            if not row and n + 1 < len(lines):
                row = re.match(r"[a-z0-9_-]*", lines[n + 1][match.start() :]).group(0)
            if f"{match.group(1)}/{row}" not in ids:
                bad.append(f"{match.group(1)}/{row}")
    return bad


TABLES = [
    ["claims"],
    ["hw", "show", "h200-sxm"],
    ["hw", "compare", "h100-sxm", "h200-sxm"],
    ["graph", "why", "mamba2-ssd", "--on", "h200-sxm"],
    ["graph", "diff", "h100-sxm", "h200-sxm"],
    ["graph", "what-if", "h100-sxm", "--set", "hbm_bandwidth=4.8"],
    ["graph", "status"],
]


@pytest.mark.parametrize("width", [80, 100, 120, 200])
@pytest.mark.parametrize("args", TABLES, ids=" ".join)
def test_tables_never_break_ids(args: list[str], width: int) -> None:
    result = run(*KB, *args, env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert broken(_claim_ids(), result.stdout) == []
    # tables fit (free text, such as a summary sentence, is left to the terminal to wrap)
    ruled = [ln for ln in result.stdout.splitlines() if set(ln) & set("│┃━─")]
    assert max((len(line) for line in ruled), default=0) <= width


def test_the_id_check_can_fail() -> None:
    ids = ["mamba2-ssd/default-chunk-size"]
    assert broken(ids, "mamba2-ssd/default-c\nhunk-size") == ["mamba2-ssd/default-c"]
    assert broken(ids, "| mamba2-ssd/  | x\n| default-chu | nk-size") == ["mamba2-ssd/default-chu"]
    assert broken(ids, "| mamba2-ssd/         | x\n| default-chunk-size  | y") == []
