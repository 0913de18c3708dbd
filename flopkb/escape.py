"""Record text made safe to show: one sanitiser for every place flopkb prints what a record or a
file name holds.

What a pull request writes into a title, a prose or a file name must never act on whoever reads
flopkb's output: a terminal (ESC sequences: OSC 52 writes the clipboard, CSI 2J clears the
screen, OSC 8 makes links), a reader's eyes (bidi controls reorder what is shown), or a CI
runner (GitHub Actions executes a line that starts with `::` and one that holds `##[`).

- `visible(text)`: control characters (C0, DEL, C1), bidi controls and the line and paragraph
  separators shown as `\\x1b` / `\\u202e` escapes, and `##[` shown as `#\\x23[`. For text output
  (findings, tables, errors, hints, file paths).
- `guard_lines(text)`: a line of rendered output that starts with `::` (after blanks and colour
  codes) starts with `\\x3a:` instead; `##[` anywhere is `#\\x23[`. For whole outputs whose lines
  a table or a wrap may have cut anywhere (`GuardedStream` does it for the rich consoles).
- `yaml_listing(data)`: YAML to paste back into a record (`flopkb extract`), in which every text
  that would show otherwise is double-quoted, so that the escapes above are YAML's own: the
  listing is safe to show and still parses to the very text.
- `guard_json(text)`: `##[` in serialised JSON is `#\\u0023[`, which every JSON parser reads back
  as `##[`: the value stays exact (JSON escapes control characters itself; `ensure_ascii` the
  rest).

The escapes are for display only: records are never rewritten, and JSON keeps the full value.
"""

from __future__ import annotations

import re
import sys
from typing import IO, Any

import yaml

# C0 (tab, LF and CR included), DEL, C1 (as regex class ranges)
CONTROL_CHARS = "\x00-\x1f\x7f-\x9f"
# the same less tab and LF, which text that spans lines holds
CONTROL_CHARS_IN_BLOCK = "\x00-\x08\x0b-\x1f\x7f-\x9f"
# Arabic letter mark, LRM, RLM, LRE..RLO, LRI..PDI: they reorder the text around them
BIDI_CHARS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# the line and paragraph separators: some viewers break lines there
_SEPARATORS = "\u2028\u2029"
UNSAFE = re.compile(f"[{CONTROL_CHARS}{BIDI_CHARS}{_SEPARATORS}]")
UNSAFE_IN_BLOCK = re.compile(f"[{CONTROL_CHARS_IN_BLOCK}{BIDI_CHARS}{_SEPARATORS}]")
# the old form of GitHub's workflow commands: recognised anywhere in a line
LEGACY_COMMAND = "##["
# the current form: a line that starts with `::`, after blanks (and, in a coloured terminal
# log, after SGR colour codes)
_LINE_COMMAND = re.compile(r"(?m)^((?:[ \t\f\v]|\x1b\[[0-9;]*m)*):(?=:)")
_SGR = re.compile(r"\x1b\[[0-9;]*m")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape_char(char: str) -> str:
    """`\\n` for LF (`\\t`, `\\r`), `\\x1b` for another code point below 256, `\\u202e`
    above: Python's own notation."""
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(match: re.Match[str]) -> str:
    return escape_char(match.group())


def visible(text: object, *, block: bool = False) -> str:
    """`text` as it may be shown: unsafe characters escaped, `##[` defused.

    `block=True` keeps tab and LF (text shown over several lines, such as a YAML listing);
    otherwise the result is one line.
    """
    out = (UNSAFE_IN_BLOCK if block else UNSAFE).sub(_escaped, str(text))
    return out.replace(LEGACY_COMMAND, "#\\x23[")


def is_visible(text: str) -> bool:
    """True when `visible(text)` would show `text` unchanged."""
    return UNSAFE.search(text) is None and LEGACY_COMMAND not in text


def guard_lines(text: str) -> str:
    """Rendered output whose lines cannot be workflow commands (see the module doc)."""
    return _LINE_COMMAND.sub(r"\1\\x3a", text.replace(LEGACY_COMMAND, "#\\x23["))


def guard_json(text: str) -> str:
    """Serialised JSON (with `ensure_ascii`) whose lines cannot be workflow commands; exact."""
    # `#` is never JSON syntax, so `##[` only occurs inside a string, where `\u0023` means `#`
    return text.replace(LEGACY_COMMAND, "#\\u0023[")


# bidi controls: PyYAML writes them as they are even in a double-quoted scalar (with
# allow_unicode, they count as printable); every other character of UNSAFE it escapes there
_YAML_RAW = re.compile(f"[{BIDI_CHARS}]")


class _ListingDumper(yaml.SafeDumper):
    """SafeDumper that double-quotes any text `visible` or `guard_lines` would change."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    quoted = not is_visible(value) or "::" in value
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if quoted else None)


_ListingDumper.add_representer(str, _text)


def yaml_listing(data: object, width: int = 100) -> str:
    """`data` as YAML that is safe to show and parses back to `data` (see the module doc)."""
    text = yaml.dump(data, Dumper=_ListingDumper, sort_keys=False, allow_unicode=True, width=width)
    return guard_lines(_YAML_RAW.sub(_escaped, text))


class GuardedStream:
    """A text stream for a rich Console: writes go to the process's current stdout or stderr
    (looked up at each write, as rich does, so test runners that swap them still capture),
    through `guard_lines`.

    Whether the previous write ended a line is remembered, so a line written in two pieces is
    still seen from its start.
    """

    def __init__(self, stderr: bool = False) -> None:
        self.stderr = stderr
        self._at_line_start = True

    @property
    def target(self) -> IO[str]:
        stream = sys.stderr if self.stderr else sys.stdout
        # rich's Live replaces sys.stdout/sys.stderr with a proxy that prints through the
        # console again; writing to the proxy would loop, so write to what it proxies
        return getattr(stream, "rich_proxied_file", stream)

    def write(self, text: str) -> int:
        if self._at_line_start:
            guarded = guard_lines(text)
        else:
            # the first line continues one already begun: only `##[` can matter there
            head, newline, rest = text.partition("\n")
            guarded = head.replace(LEGACY_COMMAND, "#\\x23[") + newline + guard_lines(rest)
        last_newline = text.rfind("\n")
        if last_newline >= 0 or self._at_line_start:
            # still at a line's start when what follows the last newline is blanks or colours
            tail = _SGR.sub("", text[last_newline + 1 :])
            self._at_line_start = not tail.strip(" \t\f\v")
        self.target.write(guarded)
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return self.target.isatty()

    def fileno(self) -> int:
        return self.target.fileno()

    def __getattr__(self, name: str) -> Any:
        # encoding, errors, ...: whatever rich asks of a stream, the real one answers (never
        # `stderr` itself, asked before __init__ set it by copy or pickle: that would recurse)
        if name == "stderr" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.target, name)
