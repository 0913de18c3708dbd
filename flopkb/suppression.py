"""Inline suppression of one finding: `# flopkb: ignore[FKB201]` in the record itself.

The comment covers the line it ends (a trailing comment) or, on a line of its own, the next line
that holds YAML. Several codes may be listed: `# flopkb: ignore[FKB201, FKB202]`. A suppression
that suppresses nothing is itself reported (FKB701, a warning), so stale ones do not pile up.
Only real YAML comments count: the same text inside a scalar (a quoted string, a `|` block of
prose) is content, found out from the composed node tree.

Some findings are never suppressed: loading and structure (FKB1xx: a record that does not load
would otherwise vanish with every reference to it) and a reference to a record that failed to
load (FKB303). A comment naming one of them is itself reported (FKB701).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from flopkb.findings import Finding
from flopkb.load import Limits, compose_node
from flopkb.rules import finding_of

MARKER = b"flopkb:"
_COMMENT = re.compile(r"#\s*flopkb:\s*ignore\[([^\]]*)\]")
UNUSED = "FKB701"
# a pull request must not be able to make a record disappear: these are reported whatever the
# record's comments say
UNSUPPRESSIBLE_PREFIXES = ("FKB1",)
UNSUPPRESSIBLE_CODES = frozenset({"FKB303"})


def suppressible(code: str) -> bool:
    """Whether an inline comment may suppress findings of `code`."""
    return not code.startswith(UNSUPPRESSIBLE_PREFIXES) and code not in UNSUPPRESSIBLE_CODES


@dataclass(frozen=True)
class Suppression:
    file: str
    line: int  # 1-based line of the comment
    column: int
    covers: int  # 1-based line whose findings it suppresses
    code: str


def _scalar_spans(node: Node | None) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, ScalarNode):
            start, end = current.start_mark, current.end_mark
            spans.append(((start.line, start.column), (end.line, end.column)))
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
    return spans


def _holds_yaml(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def suppressions_in(path: Path, display: str, limits: Limits) -> list[Suppression]:
    """Every suppression comment of one file (cheap when the file has none: a byte search)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limits.max_bytes + 1)
    except OSError:
        return []
    if MARKER not in data or len(data) > limits.max_bytes:
        return []
    lines = data.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()
    candidates = [
        (n, match)
        for n, text in enumerate(lines)
        for match in _COMMENT.finditer(text)
    ]
    if not candidates:
        return []
    # scalars never overlap: sorted by start, the one that may hold a position is found by
    # bisection (a file of 20,000 trailing comments once compared every comment to every scalar)
    spans = sorted(_scalar_spans(compose_node(path, limits)))
    starts = [start for start, _ in spans]
    # for each line, the next line below it that holds YAML (one pass from the end, not a scan
    # per comment: a file of comment lines only was quadratic)
    next_yaml = [0] * len(lines)
    following = -1
    for k in range(len(lines) - 1, -1, -1):
        next_yaml[k] = following
        if _holds_yaml(lines[k]):
            following = k
    out = []
    for n, match in candidates:
        at = (n, match.start())
        i = bisect_right(starts, at) - 1
        if i >= 0 and at < spans[i][1]:
            continue  # the text sits inside a scalar: content, not a comment
        before = lines[n][: match.start()]
        covers = n + 1
        if not before.strip():
            later = next_yaml[n] if next_yaml[n] >= 0 else n
            covers = later + 1
        for code in (c.strip() for c in match.group(1).split(",")):
            if code:
                out.append(Suppression(display, n + 1, match.start() + 1, covers, code))
    return out


def apply(
    findings: list[Finding],
    files: Iterable[tuple[Path, str]],
    limits: Limits,
    known_codes: set[str],
    judged: set[str] | None = None,
) -> list[Finding]:
    """`findings` without the suppressed ones, plus FKB701 for each suppression that did nothing.

    `judged`: codes whose findings this run looked for; a suppression of a code outside it (not
    selected) cannot be told unused and is left alone.
    """
    table: dict[tuple[str, int, str], Suppression] = {}
    for path, display in files:
        for s in suppressions_in(path, display, limits):
            table.setdefault((s.file, s.covers, s.code), s)
    if not table:
        return findings
    used: set[tuple[str, int, str]] = set()
    kept = []
    for f in findings:
        key = (f.file, f.line, f.rule)
        if f.line and key in table and suppressible(f.rule):
            used.add(key)
        else:
            kept.append(f)
    kept.extend(_unused(table, used, known_codes, judged))
    return kept


def _unused(
    table: dict[tuple[str, int, str], Suppression],
    used: set[tuple[str, int, str]],
    known_codes: set[str],
    judged: set[str] | None,
) -> Iterator[Finding]:
    for key, s in table.items():
        if key in used:
            continue
        if s.code not in known_codes:
            message = f"`# flopkb: ignore[{s.code}]` names no rule"
        elif not suppressible(s.code):
            message = (
                f"`# flopkb: ignore[{s.code}]`: {s.code} is never suppressed (loading and "
                "structure, FKB1xx, and references to a record that failed to load, FKB303)"
            )
        elif judged is not None and s.code not in judged:
            continue
        else:
            message = f"`# flopkb: ignore[{s.code}]` suppresses nothing on line {s.covers}"
        yield finding_of(
            UNUSED, s.file, s.line, s.column, None, message,
            "remove the comment (or fix the code it names)",
        )  # fmt: skip
