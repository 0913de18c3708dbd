"""Issue 18: what records and file names hold never acts on a terminal, a CI runner or an XML
reader.

A copy of the bundled KB gets a payload of injection strings (workflow commands, ESC sequences,
bidi controls, rich markup, NUL, CR) in every text field of every record kind, in a file name and
in a folder name. Every command, in every format, must then print no raw control or bidi
character in text, no line a GitHub runner would execute (`::` at a line's start, `##[`
anywhere), never exit 2; JSON keeps the full value; GraphML parses; DOT is well-formed.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.cli.common import ColorMode, OutputFormat, configure_color
from flopkb.cli.verify import _report
from flopkb.escape import GuardedStream, guard_json, guard_lines, visible, yaml_listing
from flopkb.paths import bundled_root

runner = CliRunner()

INJECTIONS = {
    "workflow command after a newline": "x\n::error file=a.py,line=1::pwned",
    "add-mask": "::add-mask::secret",
    "legacy command": "##[error]legacy",
    "OSC 52 clipboard write": "\x1b]52;c;SGVsbG8=\x07",
    "CSI clear screen": "\x1b[2J",
    "OSC 8 link": "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "right-to-left override": "\u202egnp.exe",
    "rich link markup": "[link=https://evil.example]x[/link]",
    "rich closing tag": "[/nope]",
    "SOH": "\x01",
    "NUL": "\x00",
    "CR": "a\rb",
    "C1 CSI": "\x9b2J",
    "line separator": "a\u2028::error::u2028",
}
PAYLOAD = " | ".join(INJECTIONS.values())
# characters no text output may hold raw (LF ends lines; rich prints no colour into a pipe)
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
EVIL_FILE = "evil\n::error file=x,line=1::from a file name \x1b[2J\u202e.yaml"
EVIL_FOLDER = "##[warning]folder \x1b]52;c;SGVsbG8=\x07"


def _edit(path: Path, change: Any) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    # allow_unicode off: every control and bidi character is written as a YAML escape
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=False), encoding="utf-8")


def _class(d: dict[str, Any]) -> None:
    d["title"] = "SSD " + PAYLOAD
    d["prose"] += "\n" + PAYLOAD + " is quoted here.\n"
    d["key_points"][0] += PAYLOAD
    rows = d["flop"]["hardware_parameters"]
    rows[0]["note"] = PAYLOAD
    rows[0]["conditions"]["hardware"] = PAYLOAD
    # not in the prose: FKB201, whose hint quotes the closest span of the (hostile) prose
    rows[1]["effect"] = PAYLOAD + " is not quoted"
    # an unverified row: `claims` and `graph status` list its magnitude (FKB203: no grammar)
    unverified = next(r for r in rows if r["basis"] == "unverified")
    unverified["magnitude"] = PAYLOAD


def _accelerator(d: dict[str, Any]) -> None:
    d["title"] = PAYLOAD
    d["vendor"] = PAYLOAD
    d["specs"]["hbm_bandwidth"]["note"] = PAYLOAD
    # `hw show` and `hw compare` print the units of specs
    d["specs"]["l2_cache_size"]["unit"] = PAYLOAD
    d["specs"]["hbm_bandwidth"]["source"]["locator"] = PAYLOAD


def _source(d: dict[str, Any]) -> None:
    d["title"] = PAYLOAD
    d["authors"] = [PAYLOAD, "Albert Gu"]
    d["venue"] = PAYLOAD


def _quantity(d: dict[str, Any]) -> None:
    d["title"] = PAYLOAD
    d["meaning"] = PAYLOAD


def _evidence(d: dict[str, Any]) -> None:
    d["title"] = PAYLOAD
    d["machine"]["gpu"] = PAYLOAD
    d["criterion"] = PAYLOAD
    d["reason"] = PAYLOAD
    d["history"][0]["note"] = PAYLOAD


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("escaping") / "kb"
    shutil.copytree(bundled_root() / "records", root / "records")
    records = root / "records"
    _edit(records / "classes/mamba2-ssd.yaml", _class)
    _edit(records / "accelerators/h200-sxm.yaml", _accelerator)
    _edit(records / "sources/dao-gu-2024-ssd.yaml", _source)
    _edit(records / "quantities/hbm_bandwidth.yaml", _quantity)
    evidence = sorted((records / "evidence").glob("ev-mamba2-ssd--ssd-vs-fused-scan-*.yaml"))
    _edit(evidence[-1], _evidence)
    # an error verdict: `claims` prints its reason's first clause where a figure would stand
    refused = sorted((records / "evidence").glob("ev-kimi-linear--decoding-throughput-*.yaml"))
    _edit(refused[-1], lambda d: d.update(reason=PAYLOAD + "; the notes after it"))
    # a record under a hostile file name (FKB125: id and stem differ) and one in a hostile
    # folder (FKB126: not in the folder of its kind)
    source = (records / "sources/dao-gu-2024-ssd.yaml").read_text(encoding="utf-8")
    (records / "sources" / EVIL_FILE).write_text(
        source.replace("id: dao-gu-2024-ssd", "id: evil-file-name"), encoding="utf-8"
    )
    (records / EVIL_FOLDER).mkdir()
    quantity = (records / "quantities/hbm_bandwidth.yaml").read_text(encoding="utf-8")
    (records / EVIL_FOLDER / "evil_folder_quantity.yaml").write_text(
        quantity.replace("id: hbm_bandwidth", "id: evil_folder_quantity"), encoding="utf-8"
    )
    return root


def _invoke(kb: Path, *args: str, columns: int | None = None, usage: bool = False) -> Any:
    """Run flopkb on `kb`: never exit 2 from what the KB holds (`usage`: a mistyped argument,
    exit 2 by contract)."""
    env = {"COLUMNS": str(columns)} if columns else None
    result = runner.invoke(app, ["--kb", str(kb), *args], env=env)
    assert (result.exit_code == 2) == usage, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def assert_cannot_command_a_runner(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line


def assert_safe_text(text: str) -> None:
    assert_cannot_command_a_runner(text)
    raw = RAW.search(text)
    assert raw is None, f"raw {raw.group()!r} in {text[max(0, raw.start() - 60) : raw.end()]!r}"


# the queries, each in text; `--format json` of each below
QUERIES = [
    ["claims"],
    ["claims", "--record", "mamba2-ssd"],
    ["hw", "show", "h200-sxm"],
    ["hw", "compare", "h100-sxm", "h200-sxm"],
    ["graph", "why", "mamba2-ssd", "--on", "h200-sxm"],
    ["graph", "affects", "hbm_bandwidth"],
    ["graph", "affects", "dao-gu-2024-ssd"],
    ["graph", "diff", "h100-sxm", "h200-sxm"],
    ["graph", "what-if", "h200-sxm", "--set", "hbm_bandwidth=5"],
    ["graph", "path", "mamba2-ssd", "dao-gu-2024-ssd"],
    ["graph", "status"],
    ["extract", "mamba2-ssd", "--all"],
]
# usage errors that echo what was typed (ids pasted from a hostile record)
ERRORS = [
    ["hw", "show", "nope\x1b[2J\n::error ::typed"],
    ["graph", "why", "[/nope]\u202e##[error]"],
    ["extract", "x\r::add-mask::y"],
]


@pytest.mark.parametrize("args", QUERIES, ids=" ".join)
def test_text_output_is_escaped(kb: Path, args: list[str]) -> None:
    result = _invoke(kb, *args)
    assert_safe_text(result.stdout)
    assert_safe_text(result.stderr)


@pytest.mark.parametrize("args", ERRORS, ids=" ".join)
def test_error_lines_are_escaped(kb: Path, args: list[str]) -> None:
    result = _invoke(kb, *args, usage=True)
    assert_safe_text(result.stderr)
    assert len(result.stderr.splitlines()) == 1
    document = _invoke(kb, *args, "--format", "json", usage=True).stdout
    assert_cannot_command_a_runner(document)
    # the message quotes the id as Python's repr does, in full
    assert repr(args[-1]) in json.loads(document)["error"]["message"]


@pytest.mark.parametrize("columns", [30, 60, 200])
def test_tables_cut_or_wrapped_anywhere_stay_safe(kb: Path, columns: int) -> None:
    for args in (["hw", "show", "h200-sxm"], ["graph", "why", "mamba2-ssd"], ["claims"]):
        assert_safe_text(_invoke(kb, *args, columns=columns).stdout)


def test_markup_in_a_record_prints_as_written(kb: Path) -> None:
    out = _invoke(kb, "hw", "show", "h200-sxm", columns=400).stdout
    assert "[link=https://evil.example]x[/link]" in out
    assert "[/nope]" in out
    assert "\\x1b[2J" in out and "\\u202egnp.exe" in out and "\\x00" in out
    why = _invoke(kb, "graph", "why", "mamba2-ssd", columns=400).stdout
    assert why.startswith("mamba2-ssd: SSD x\\n::error file=a.py,line=1::pwned | ::add-mask")
    assert "[/nope]" in why


@pytest.mark.parametrize("args", QUERIES, ids=" ".join)
def test_json_output_is_exact_and_cannot_command_a_runner(kb: Path, args: list[str]) -> None:
    result = _invoke(kb, *args, "--format", "json")
    assert_cannot_command_a_runner(result.stdout)
    json.loads(result.stdout)


def test_json_keeps_the_full_value(kb: Path) -> None:
    show = json.loads(_invoke(kb, "hw", "show", "h200-sxm", "--format", "json").stdout)
    assert show["title"] == PAYLOAD
    assert show["specs"]["hbm_bandwidth"]["note"] == PAYLOAD
    why = json.loads(_invoke(kb, "graph", "why", "mamba2-ssd", "--format", "json").stdout)
    assert why["title"] == "SSD " + PAYLOAD


def test_validate_reports_every_hostile_value_and_prints_them_escaped(kb: Path) -> None:
    text = _invoke(kb, "validate", "--strict")
    assert text.exit_code == 1
    assert_safe_text(text.stdout)
    data = json.loads(_invoke(kb, "validate", "--format", "json").stdout)
    found = {(f["record"], f["rule"]) for f in data["errors"] + data["warnings"]}
    for rid in ("mamba2-ssd", "h200-sxm", "dao-gu-2024-ssd", "hbm_bandwidth"):
        assert (rid, "FKB118") in found, rid
        assert (rid, "FKB119") in found, rid
    assert any(r.startswith("ev-mamba2-ssd--ssd-vs-fused-scan") and c == "FKB118" for r, c in found)
    assert ("evil-file-name", "FKB125") in found
    assert ("evil_folder_quantity", "FKB126") in found
    assert ("mamba2-ssd", "FKB201") in found
    # the file name is kept whole in JSON
    assert any(f["file"].endswith(EVIL_FILE) for f in data["errors"])
    sarif = _invoke(kb, "validate", "--format", "sarif").stdout
    assert_cannot_command_a_runner(sarif)
    for result in json.loads(sarif)["runs"][0]["results"]:
        # what code scanning shows people holds no raw control or bidi character
        assert RAW.search(result["message"]["text"]) is None, result["message"]["text"]


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled KB, unchanged, in a folder whose name is a workflow command: every finding
    (the bundled KB has FKB603 notes) and every KB line prints that name."""
    root = tmp_path_factory.mktemp("root") / "kb\n::error file=x,line=1::from the KB root \x1b[2J"
    shutil.copytree(bundled_root() / "records", root / "records")
    return root


@pytest.mark.parametrize(
    "args",
    [["validate", "--strict"], ["validate", "--format", "github"], ["claims"], ["graph", "status"]],
    ids=" ".join,
)
def test_a_hostile_kb_folder_name_is_shown_escaped(hostile_root: Path, args: list[str]) -> None:
    """Before: the folder's name put `::error` at column 0, and `validate --strict` exited 0."""
    result = _invoke(hostile_root, *args)
    assert result.exit_code == 0, result.output
    if "github" in args:
        assert all(_ANNOTATION.fullmatch(line) for line in result.stdout.splitlines())
    else:
        assert_safe_text(result.stdout)
        assert "kb\\n::error file=x,line=1::from the KB root \\x1b[2J" in result.stdout


_SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("args", [["hw", "show", "h200-sxm"], ["graph", "why", "mamba2-ssd"]])
def test_coloured_output_cannot_command_a_runner(kb: Path, args: list[str]) -> None:
    """With colour forced (a CI log that keeps colours), a line that starts with colour codes
    and then `::` is a line that starts with `::`."""
    result = runner.invoke(app, ["--color", "always", "--kb", str(kb), *args])
    assert result.exit_code == 0, result.output
    assert "\x1b[" in result.stdout  # coloured indeed
    assert_cannot_command_a_runner(_SGR.sub("", result.stdout))
    # the only ESC left are rich's own colour codes: every ESC of the records is text
    assert "\x1b" not in _SGR.sub("", result.stdout)


# one GitHub workflow command per line, ours: `::level props::data`, props without a raw `:` or
# `,` in a value, data without a raw control character or `##[`
_ANNOTATION = re.compile(
    r"::(error|warning|notice) file=[^:,\x00-\x1f\x7f-\x9f]*(,line=\d+,col=\d+)?,title=FKB\d+"
    r"::[^\x00-\x1f\x7f-\x9f]*"
)


def test_github_annotations_are_ours_alone(kb: Path) -> None:
    result = _invoke(kb, "validate", "--format", "github")
    lines = result.stdout.splitlines()
    assert lines
    for line in lines:
        assert _ANNOTATION.fullmatch(line), line
        assert "##[" not in line
        assert RAW.search(line) is None, line
    evil = "evil\\n%3A%3Aerror file=x%2Cline=1%3A%3Afrom a file name \\x1b[2J\\u202e.yaml"
    assert any(f"{evil},line=" in line and "title=FKB125" in line for line in lines)


def test_exports_are_well_formed(kb: Path) -> None:
    graphml = _invoke(kb, "graph", "export", "--format", "graphml").stdout
    assert_cannot_command_a_runner(graphml)
    tree = ET.fromstring(graphml)
    titles = [d.text for d in tree.iter() if d.tag.endswith("data") and d.text]
    # what XML can hold comes back exactly; the rest shows as \x01 text
    assert any(t.startswith("SSD x\n::error file=a.py,line=1::pwned") for t in titles)
    assert any("##[error]legacy" in t and "\\x1b]52" in t and "\u202e" in t for t in titles)
    dot = _invoke(kb, "graph", "export", "--format", "dot").stdout
    assert_safe_text(dot)
    for line in dot.splitlines():
        # every quoted string closed on its own line (escapes understood)
        assert re.fullmatch(r'(?:[^"\\]|"(?:[^"\\]|\\.)*")*', line), line
    node_link = _invoke(kb, "graph", "export", "--format", "json").stdout
    assert_cannot_command_a_runner(node_link)
    nodes = {n["id"]: n for n in json.loads(node_link)["nodes"]}
    assert nodes["class:mamba2-ssd"]["title"] == "SSD " + PAYLOAD


def test_render_dot_text_holds_no_raw_control_character(kb: Path) -> None:
    """`dot` is not installed here: the positioned DOT it would be given is checked instead."""
    from flopkb.graph import picture, render
    from flopkb.graph.queries import KBGraph
    from flopkb.kb import load_kb

    kg = KBGraph.from_kb(load_kb(kb)[0])
    sub = render._styled(kg, set(kg.g))
    lay, legend = render._picture(sub, None)
    dot = picture.positioned_dot(lay, sub, legend, render.RELATION_STYLE)
    assert "\\\\x1b]52" in dot  # the title's ESC is in a tooltip, as text
    assert_safe_text(dot)


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz `dot` is not installed")
def test_graphviz_svg_parses(kb: Path, tmp_path: Path) -> None:
    """Before: NUL in a title made `dot` fail (exit 2), ESC or SOH made the SVG unparseable."""
    out = tmp_path / "kb.svg"
    result = _invoke(kb, "graph", "render", str(out), "--engine", "graphviz")
    assert result.exit_code == 0, result.output
    ET.parse(out)


def test_verify_report_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    payload = {
        "machine": {"gpu": PAYLOAD, "accelerator": "h200-sxm", "torch": "2", "triton": "3"},
        "duration_s": 1.0,
        "results": [
            {
                "claim": "mamba2-ssd/x", "experiment": "ssd-vs-scan", "verdict": "error",
                "reason": PAYLOAD, "expected": {"text": PAYLOAD}, "conditions": {"hw": PAYLOAD},
                "measured": None,
                "judgements": [
                    {"combination": {"a": PAYLOAD}, "verdict": "error", "measured": None},
                    {"combination": {"a": "bundled"}, "verdict": "error", "measured": None},
                ],
            }
        ],
    }  # fmt: skip
    configure_color(ColorMode.never)
    _report(payload, OutputFormat.text, plan_mode=False)
    out = capsys.readouterr().out
    assert "[link=https://evil.example]x[/link]" in out
    assert_safe_text(out)


def test_visible_escapes_and_defuses() -> None:
    assert visible("a\x1b[2Jb\u202ec\x00\td\n") == "a\\x1b[2Jb\\u202ec\\x00\\td\\n"
    assert visible("see ##[error]x") == "see #\\x23[error]x"
    assert visible("tab\tand\nline", block=True) == "tab\tand\nline"
    assert visible("cub::DeviceReduce") == "cub::DeviceReduce"


def test_guard_lines_defuses_a_leading_double_colon_only() -> None:
    assert guard_lines("::error x\n  ::warning y\ncub::DeviceReduce\n") == (
        "\\x3a:error x\n  \\x3a:warning y\ncub::DeviceReduce\n"
    )
    # after colour codes too (a coloured log)
    assert guard_lines("\x1b[1m::error\n") == "\x1b[1m\\x3a:error\n"


def test_guard_json_is_exact() -> None:
    value = {"t": "##[error] \\##[x"}
    text = guard_json(json.dumps(value))
    assert "##[" not in text
    assert json.loads(text) == value


def test_yaml_listing_parses_back_to_the_same_text() -> None:
    rows = [{"effect": PAYLOAD + " " + "word " * 40 + "::error x", "magnitude": "2-8x"}]
    text = yaml_listing(rows, width=40)
    assert_safe_text(text)
    assert yaml.safe_load(text) == rows


def test_guarded_stream_sees_lines_split_over_writes(capsys: pytest.CaptureFixture[str]) -> None:
    """rich writes each print whole; a line begun by one write and ended by the next is still
    judged from its start."""
    stream = GuardedStream()
    for piece in ("a line ", "and ::more\n", "  ", "::error x\n", "x ##[y\n"):
        stream.write(piece)
    assert capsys.readouterr().out == "a line and ::more\n  \\x3a:error x\nx #\\x23[y\n"


def test_rich_console_through_the_stream_folds_safely(capsys: pytest.CaptureFixture[str]) -> None:
    """A word longer than the console is folded at any character: `::` may start a line."""
    console = Console(file=GuardedStream(), width=10, soft_wrap=False, color_system=None)
    console.print("abcdefghij::error::x")
    out = capsys.readouterr().out
    assert "\\x3a:error" in out
    assert_cannot_command_a_runner(out)
