"""Untrusted YAML -> plain Python values, keeping the node tree for file:line:col of every value.

libyaml composes the node tree (C, with marks); we build the values ourselves from the nodes so
that nothing outside the YAML 1.2 core schema is ever constructed. Choices, all documented in
docs/validate.md:

- Plain scalars resolve by the YAML 1.2 core schema, not PyYAML's 1.1 rules: `no`, `on`, `yes` stay
  strings (the Norway problem), `3:1` stays a string (1.1 reads it as the sexagesimal int 181), and
  bare dates stay text that the model parses (`history[].date` is a `datetime.date`).
- Mapping keys are their text; a key given twice is an error (FKB106).
- Anchors and aliases are refused (FKB107) and never expanded; any tag outside the core schema
  (`!!python/...`, `!!binary`, `!foo`) is refused (FKB108) and never constructed.
- Size (FKB102), NUL bytes and control characters (FKB104), bad UTF-8 (FKB103) are found before
  parsing, located at the first bad byte; nesting is capped (FKB109) while building values, and
  libyaml >= 0.2.5 itself stops at 1000 levels, so its recursive composer never runs away.
- Number literals longer than `flopkb.budget.MAX_NUMBER_CHARS` (FKB114), mappings of more than
  `MAX_KEYS` keys and lists of more than `MAX_ITEMS` items (FKB115) are refused before any value
  is built: a 5,000-digit integer would otherwise raise Python's int-conversion limit, and every
  later stage is linear in the entries.
- A UTF-8 BOM and CRLF line ends are accepted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from flopkb import budget
from flopkb.findings import Finding
from flopkb.load.safefile import RefusedFile, read_regular
from flopkb.rules import finding_of

try:
    from yaml._yaml import CParser, get_version

    _LIBYAML_BOUNDS_DEPTH = get_version() >= (0, 2, 5)
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class CParser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream: Any) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)

    _LIBYAML_BOUNDS_DEPTH = False

DEFAULT_MAX_BYTES = budget.MAX_BYTES
DEFAULT_MAX_DEPTH = budget.MAX_DEPTH

_CORE = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP = _CORE + "str", _CORE + "seq", _CORE + "map"
# Tags resolved by us (plain scalars) or written explicitly and still in the core schema.
_PLAIN = "?"
_CORE_SCALARS = {_CORE + t for t in ("str", "int", "float", "bool", "null")}
_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_SPECIAL_FLOATS = {
    ".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
    "+.inf": math.inf, "+.Inf": math.inf, "+.INF": math.inf,
    "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
    ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
}  # fmt: skip
_NUMBER_START = frozenset("0123456789+-.")
_WORDS = frozenset(_NULLS) | frozenset(_BOOLS)
_CONTROL = re.compile(r"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")


class _Parser(CParser):  # type: ignore[misc,valid-type]
    """libyaml's composer with a resolver that only marks plain scalars; we resolve them later."""

    def descend_resolver(self, *_: Any) -> None:
        return None

    def ascend_resolver(self, *_: Any) -> None:
        return None

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is SequenceNode else _MAP


@dataclass(frozen=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH
    max_keys: int = budget.MAX_KEYS
    max_items: int = budget.MAX_ITEMS


@dataclass
class Document:
    """One file: its node tree (for locations) and its value, or None when it could not be built."""

    path: Path
    display: str
    node: Node | None = None
    data: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)


def _line_col(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of byte `offset`."""
    start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[start:offset].decode("utf-8", errors="replace")) + 1
    return raw.count(b"\n", 0, offset) + 1, column


def _text_line_col(text: str, index: int) -> tuple[int, int]:
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _resolve_plain(value: str) -> Any:
    if value in _NULLS:
        return None
    if value in _BOOLS:
        return _BOOLS[value]
    if value[0] in _NUMBER_START:
        if _INT.fullmatch(value):
            return int(value, 0) if value[:2] in ("0o", "0x") else int(value)
        if _FLOAT.fullmatch(value):
            return float(value)
        if value in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[value]
    return value


class _Builder:
    """Node tree -> values. Recursion is capped at `max_depth`, so it never nears Python's limit."""

    def __init__(self, doc: Document, limits: Limits) -> None:
        self.doc = doc
        self.max_depth = limits.max_depth
        self.max_keys = limits.max_keys
        self.max_items = limits.max_items
        self.failed = False

    def error(self, code: str, node: Node, message: str, hint: str | None = None) -> None:
        mark = node.start_mark
        self.doc.findings.append(
            finding_of(
                code, self.doc.display, mark.line + 1, mark.column + 1, None, message, hint
            )
        )
        self.failed = True

    def value(self, node: Node, depth: int) -> Any:
        if depth > self.max_depth:
            self.error("FKB109", node, f"nesting deeper than {self.max_depth} levels")
            return None
        tag = node.tag
        if type(node) is ScalarNode:
            text = node.value
            if tag == _STR:
                return text
            if tag == _PLAIN:
                # fast path: most plain scalars are words, which the core schema leaves as text
                if text and text[0] not in _NUMBER_START and text not in _WORDS:
                    return text
                if len(text) > budget.MAX_NUMBER_CHARS and _is_number(text):
                    return self.too_long(node)
                value = _resolve_plain(text)
            elif tag in _CORE_SCALARS:
                if len(text) > budget.MAX_NUMBER_CHARS and _is_number(text):
                    return self.too_long(node)
                value = _resolve_plain(node.value)
                if _CORE + _type_tag(value) != tag:
                    self.error("FKB108", node, f"{node.value!r} does not fit its tag {tag}")
                    return None
            else:
                self.error("FKB108", node, f"tag {tag} is outside the YAML core schema; refused")
                return None
            if type(value) is float and not math.isfinite(value):
                self.error(
                    "FKB113", node, f"non-finite number {node.value!r}",
                    "write a finite figure, or null with a note when the value does not exist",
                )  # fmt: skip
            return value
        if tag == _MAP and type(node) is MappingNode:
            return self.mapping(node, depth)
        if tag == _SEQ and type(node) is SequenceNode:
            if len(node.value) > self.max_items:
                self.error(
                    "FKB115", node, f"a list of {len(node.value)} items; at most {self.max_items}"
                )
                return None
            return [self.value(item, depth + 1) for item in node.value]
        self.error("FKB108", node, f"tag {tag} is outside the YAML core schema; refused")
        return None

    def too_long(self, node: Node) -> None:
        self.error(
            "FKB114", node,
            f"a number of {len(node.value)} characters; at most {budget.MAX_NUMBER_CHARS}",
            "quote it if it is text; no figure of a record needs more digits",
        )  # fmt: skip

    def mapping(self, node: MappingNode, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if len(node.value) > self.max_keys:
            self.error(
                "FKB115", node, f"a mapping of {len(node.value)} keys; at most {self.max_keys}"
            )
            return out
        first_keys: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if type(key_node) is not ScalarNode or key_node.tag not in (_PLAIN, _STR):
                self.error("FKB112", key_node, "a mapping key must be a plain scalar")
                continue
            key = key_node.value
            if key in out:
                line = first_keys[key].start_mark.line + 1
                message = f"key {_short(key)} appears twice (first on line {line})"
                self.error("FKB106", key_node, message)
                continue
            first_keys[key] = key_node
            out[key] = self.value(value_node, depth + 1)
        return out


def _short(text: str, limit: int = 60) -> str:
    """`repr(text)`, cut to `limit` characters: a message never echoes a megabyte of key."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _is_number(text: str) -> bool:
    """Whether a scalar's text resolves to an int or a float under the core schema."""
    return bool(_INT.fullmatch(text) or _FLOAT.fullmatch(text))


def _type_tag(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float"}.get(type(value), "str")


def _depth_prescan(text: str, limit: int) -> tuple[int, int] | None:
    """Where nesting first passes `limit` by a coarse bound (flow brackets, indentation, `- `).

    Only used with a libyaml older than 0.2.5 (or none), whose recursive composer has no cap.
    """
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        dashes = len(re.match(r"(?:-\s+)*", stripped).group(0).split("-")) - 1  # type: ignore[union-attr]
        if indent + dashes > limit * 2 or line.count("[") + line.count("{") > limit:
            return number, 1
    return None


def read_document(
    path: Path, display: str, limits: Limits = Limits(), *, values: bool = True
) -> Document:
    """Read and compose one file; every problem becomes a located finding in `Document.findings`.

    `values=False` stops at the node tree (for locations in a file that loaded before).
    """
    doc = Document(path=path, display=display)

    def whole_file(code: str, message: str, line: int = 0, column: int = 0) -> Document:
        doc.findings.append(finding_of(code, display, line, column, None, message))
        return doc

    try:
        raw = read_regular(path, limits.max_bytes + 1)
    except RefusedFile as exc:
        return whole_file(exc.code, exc.message)
    except OSError as exc:
        return whole_file("FKB101", f"cannot read the file: {exc.strerror or exc}")
    if len(raw) > limits.max_bytes:
        return whole_file("FKB102", f"the file is larger than {limits.max_bytes} bytes")
    nul = raw.find(b"\x00")
    if nul >= 0:
        return whole_file("FKB104", "NUL byte in the file", *_line_col(raw, nul))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_col(raw, exc.start)
        return whole_file(
            "FKB103", f"not UTF-8: byte 0x{raw[exc.start]:02x} ({exc.reason})", line, column
        )
    if not _LIBYAML_BOUNDS_DEPTH and (where := _depth_prescan(text, limits.max_depth)):
        return whole_file("FKB109", f"nesting deeper than {limits.max_depth} levels", *where)
    parser = _Parser(raw)
    try:
        node = parser.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        problem = exc.problem or str(exc)
        code = "FKB109" if "nesting depth" in problem else "FKB105"
        context = f" ({exc.context})" if exc.context and code == "FKB105" else ""
        return whole_file(code, f"{problem}{context}", line, column)
    except yaml.YAMLError as exc:
        bad = _CONTROL.search(text)
        if bad:
            return whole_file(
                "FKB104", f"control character U+{ord(bad.group()):04X} in the file",
                *_text_line_col(text, bad.start()),
            )  # fmt: skip
        return whole_file("FKB105", str(exc).splitlines()[0])
    finally:
        parser.dispose()
    if node is None:
        return whole_file("FKB110", "the file is empty; expected a YAML mapping (a record)", 1, 1)
    doc.node = node
    if not values:
        return doc
    if b"&" in raw and _refuse_anchors(raw, doc):
        return doc
    if type(node) is not MappingNode:
        mark = node.start_mark
        found = "a list" if type(node) is SequenceNode else "a scalar"
        return whole_file(
            "FKB111",
            f"expected a mapping at the top level, got {found}",
            mark.line + 1,
            mark.column + 1,
        )
    builder = _Builder(doc, limits)
    try:
        data = builder.mapping(node, 1)
    except RecursionError:
        # only with a --max-depth raised near Python's own recursion limit
        return whole_file("FKB109", f"nesting too deep to build (limit {limits.max_depth} levels)")
    if not builder.failed:
        doc.data = data
    return doc


def _refuse_anchors(raw: bytes, doc: Document) -> bool:
    """FKB107 for every anchor and alias name (events carry them; composed nodes hide them)."""
    seen: set[tuple[str, str]] = set()
    for event in yaml.parse(raw, Loader=yaml.CSafeLoader):
        anchor = getattr(event, "anchor", None)
        if anchor is None:
            continue
        what = "alias" if isinstance(event, yaml.AliasEvent) else "anchor"
        # one finding per anchor and per alias name: a bomb repeats its aliases thousands of times
        if (what, anchor) in seen:
            continue
        if len(seen) >= budget.MAX_FINDINGS_PER_FILE:
            # enough to refuse the file; reading the rest of its events would only cost time
            break
        seen.add((what, anchor))
        mark = event.start_mark
        doc.findings.append(
            finding_of(
                "FKB107", doc.display, mark.line + 1, mark.column + 1, None,
                f"{what} {anchor!r} refused: anchors and aliases are not allowed in records",
                "write the value out in full",
            )
        )  # fmt: skip
    return bool(seen)


def compose_node(path: Path, limits: Limits = Limits()) -> Node | None:
    """The node tree of a file that loaded before (re-read when a later check needs a location)."""
    # the node tree only: building values again would double the cost of locating a finding
    return read_document(path, str(path), limits, values=False).node
