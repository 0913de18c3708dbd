"""FKB118/FKB119 (flopkb/check/characters.py): which characters of which fields are reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from flopkb.validate import validate

SMALL = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"
CLASS = "records/classes/mamba2-ssd.yaml"


def _with(tmp_path: Path, **fields: str) -> Path:
    """The small valid KB with `fields` of its class record replaced (YAML escapes kept)."""
    root = tmp_path / "kb"
    shutil.copytree(SMALL, root)
    path = root / CLASS
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for key, value in fields.items():
        if key == "note":
            data["flop"]["hardware_parameters"][0]["note"] = value
        else:
            data[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=False), encoding="utf-8")
    return root


def _codes(root: Path) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in validate(root).findings if f.rule in {"FKB118", "FKB119"}]


def test_the_small_kb_has_none(tmp_path: Path) -> None:
    assert _codes(_with(tmp_path)) == []


@pytest.mark.parametrize(
    "fields",
    [
        # prose and notes span lines: LF and tab are text there; a no-break space is typography
        {"prose": "Line one.\n\tLine two, 2\u00a0x faster."},
        {"note": "first line\nsecond line"},
        {"title": "Mamba-2 SSD \u00d7 2 \u2014 \u201cchunked\u201d"},
    ],
    ids=["prose-lines", "note-lines", "typography"],
)
def test_text_that_is_only_text_is_not_reported(tmp_path: Path, fields: dict[str, str]) -> None:
    root = _with(tmp_path, **fields)
    assert _codes(root) == []


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"title": "Mamba-2\tSSD"}, "FKB118"),
        ({"title": "Mamba-2\nSSD"}, "FKB118"),
        ({"title": "Mamba-2 SSD\x00"}, "FKB118"),
        ({"title": "Mamba-2 \x9b2J SSD"}, "FKB118"),
        ({"prose": "Mamba-2 \x1b[2J clears the screen.\n"}, "FKB118"),
        ({"prose": "a\rb\n"}, "FKB118"),
        ({"note": "\x7f"}, "FKB118"),
        ({"title": "SSD \u202egnp.exe"}, "FKB119"),
        ({"prose": "an isolate \u2066x\u2069 here\n"}, "FKB119"),
    ],
    ids=["tab-in-title", "lf-in-title", "nul", "c1", "esc-in-prose", "cr-in-prose", "del",
         "rlo", "isolate"],
)  # fmt: skip
def test_control_and_bidi_characters_are_reported(
    tmp_path: Path, fields: dict[str, str], rule: str
) -> None:
    root = _with(tmp_path, **fields)
    result = validate(root)
    found = [f for f in result.findings if f.rule in {"FKB118", "FKB119"}]
    assert [f.rule for f in found] == [rule]
    assert found[0].record == "mamba2-ssd" and found[0].line >= 1
    # the record still loads: its other checks ran (no FKB3xx for the references to it)
    assert not [f for f in result.findings if f.rule.startswith("FKB3")]
    assert found[0].severity.value == ("error" if rule == "FKB118" else "warning")


def test_a_bidi_control_fails_under_strict(tmp_path: Path) -> None:
    root = _with(tmp_path, title="SSD \u202egnp.exe")
    assert validate(root).exit_code == 0
    assert validate(root, strict=True).exit_code == 1
