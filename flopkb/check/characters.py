"""FKB118/FKB119: characters in a record's text that act on whoever reads it.

YAML's escapes let a record hold what its file may not (`"\\0"`, `"\\e[2J"`, `"\\u202e"`): the
loader's FKB104 sees the file's bytes, these rules see the values. Control characters (C0, DEL,
C1; in one-line fields also tab, LF and CR) are errors: nothing a reader needs is written with
them, and they break the XML of a picture or an export. Bidi controls reorder the text a
reviewer reads in a diff (the "Trojan Source" trick): a warning, so that `--strict` fails.
flopkb shows both escaped wherever it prints them (`flopkb.escape`); the record stays as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from flopkb.check.base import CheckContext, check
from flopkb.escape import BIDI_CHARS, CONTROL_CHARS, CONTROL_CHARS_IN_BLOCK, escape_char
from flopkb.findings import Finding

# Fields that may span lines (a YAML block scalar): tab and LF are text there. Every other string
# (titles, effects, ids, locators, units, dictionary keys and values) is one line.
MULTI_LINE_FIELDS = frozenset({"prose", "meaning", "note", "notes", "reason", "error"})
_CONTROL = re.compile(f"[{CONTROL_CHARS}]")
_CONTROL_IN_BLOCK = re.compile(f"[{CONTROL_CHARS_IN_BLOCK}]")
_BIDI = re.compile(f"[{BIDI_CHARS}]")

Where = tuple[str | int, ...]


def _strings(value: Any, path: Where, field: str) -> Iterator[tuple[Where, str, str]]:
    """(path, name of the field it belongs to, text) of every string in a record, keys too."""
    if isinstance(value, str):
        yield path, field, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name), (*path, name), name)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield (*path, key), "key", key
            yield from _strings(item, (*path, key), field)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index), field)


def _dotted(path: Where) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out[:80] + ("..." if len(out) > 80 else "")


def _described(pattern: re.Pattern[str], text: str, first: re.Match[str]) -> str:
    """`U+001B (\\x1b) at character 5 (and 2 more)`: the first one, and how many follow."""
    more = sum(1 for _ in pattern.finditer(text, first.end()))
    char = first.group()
    also = f" (and {more} more)" if more else ""
    return f"U+{ord(char):04X} ({escape_char(char)}) at character {first.start() + 1}{also}"


_SCALARS = frozenset({int, float, bool, type(None)})


def _gather(value: Any, one_line: list[str], multi_line: list[str], field: str) -> None:
    """Every string of a record into `one_line` or `multi_line` (dictionary keys are one line).

    A plain recursion that only appends, and is not even called for a number: the fast first
    pass over every record. Most records (evidence above all: thousands of numbers) hold nothing
    to report and are never walked by `_strings`.
    """
    kind = type(value)
    # exact types first: isinstance against a pydantic model class goes through ABCMeta
    if kind is str:
        (multi_line if field in MULTI_LINE_FIELDS else one_line).append(value)
    elif kind is dict:
        for key, item in value.items():
            if type(key) is str:
                one_line.append(key)
            if type(item) not in _SCALARS:
                _gather(item, one_line, multi_line, field)
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) not in _SCALARS:
                _gather(item, one_line, multi_line, field)
    elif isinstance(value, BaseModel):
        for name, item in value.__dict__.items():
            if type(item) not in _SCALARS:
                _gather(item, one_line, multi_line, name)
    elif isinstance(value, str):  # a str subclass (an enum's value)
        (multi_line if field in MULTI_LINE_FIELDS else one_line).append(value)
    elif isinstance(value, dict | list | tuple):
        _gather(dict(value) if isinstance(value, dict) else list(value), one_line, multi_line,
                field)  # fmt: skip


def _suspect(record: BaseModel) -> bool:
    """Whether some string of `record` holds a character FKB118 or FKB119 reports."""
    one_line: list[str] = []
    multi_line: list[str] = []
    _gather(record, one_line, multi_line, "")
    # a space joins them: it is none of the characters looked for
    one, multi = " ".join(one_line), " ".join(multi_line)
    # str.isprintable (C, fast) is False for every character looked for (and for a few more,
    # such as a no-break space): only then do the regular expressions run
    if one.isprintable() and multi.replace("\n", " ").replace("\t", " ").isprintable():
        return False
    return bool(
        _CONTROL.search(one) or _CONTROL_IN_BLOCK.search(multi) or _BIDI.search(one + multi)
    )


@check
def hostile_characters(ctx: CheckContext) -> Iterator[Finding]:
    """FKB118 for control characters, FKB119 for bidi controls; one finding per field."""
    for rid, record in ctx.kb.records.items():
        if _suspect(record):
            yield from ctx.isolated(rid, _record_findings(ctx, rid, record))


def _record_findings(ctx: CheckContext, rid: str, record: BaseModel) -> Iterator[Finding]:
    for path, field, text in _strings(record, (), ""):
        multi_line = field in MULTI_LINE_FIELDS
        pattern = _CONTROL_IN_BLOCK if multi_line else _CONTROL
        control = pattern.search(text)
        if control is not None:
            yield ctx.finding(
                "FKB118", rid, path,
                f"{_dotted(path)}: control character {_described(pattern, text, control)}",
                "drop it or write out what it stands for (flopkb shows it escaped)"
                + ("; line breaks and tabs belong in a multi-line field such as prose"
                   if control.group() in "\t\n\r" else ""),
            )  # fmt: skip
        bidi = _BIDI.search(text)
        if bidi is not None:
            yield ctx.finding(
                "FKB119", rid, path,
                f"{_dotted(path)}: bidirectional control {_described(_BIDI, text, bidi)}: it "
                "reorders the text a reviewer reads",
                "drop it; flopkb shows it escaped",
            )  # fmt: skip
