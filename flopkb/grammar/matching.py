"""Accelerator `match` patterns: which record a running GPU's name belongs to.

Patterns are record content, so they are compiled here under bounds before anything matches
with them: at most `MAX_PATTERN_CHARS` characters, no backreferences or conditionals, no repeat
inside a repeat and no alternation inside a repeat (the shapes that backtrack exponentially), at
most `MAX_REPEATS` repeats in all (`.*` and friends: each multiplies the work by the name's
length), and names cut to `MAX_NAME_CHARS`. A pattern refused here matches nothing at verify time
and is an error at validation (FKB420); matching never raises.

Overlaps are found with witnesses: device names as CUDA reports them (`KNOWN_DEVICE_NAMES`), the
GPU names verify recorded in the KB's evidence, each accelerator's id and title, and the literal
name of each fully literal pattern (`^NVIDIA H200$`). A witness that the patterns of two
accelerators both match is an overlap (FKB422); a pattern that matches a name no GPU has claims
every GPU (FKB421).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

# the parser `re` itself uses (since 3.11 the public `sre_parse` is a deprecated alias of it,
# and importing that warns)
try:
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse  # type: ignore[no-redef]

MAX_PATTERN_CHARS = 256
MAX_REPEATS = 3
MAX_NAME_CHARS = 256
# witnesses compared with every pattern (ids and titles of a KB of many accelerators beyond it
# are not probed: the known device names always are)
MAX_WITNESSES = 2_000
# no GPU reports this: a pattern that finds it claims every GPU (one that finds the empty name
# anywhere finds it too; `^$` matches nothing real and is left alone)
PROBES = ("flopkb-probe: no such device 0",)
# Device names as CUDA reports them (torch.cuda.get_device_name): those the bundled accelerators
# match and the close relatives they must not claim, the names tests/unit/kb/test_kb_content.py
# checks (NVIDIA H200 as verify recorded it in the bundled evidence). A probe list, not an
# authority: a name missing here only makes the overlap check weaker.
KNOWN_DEVICE_NAMES = (
    "NVIDIA H100 80GB HBM3",
    "NVIDIA H100 PCIe",
    "NVIDIA H200",
    "NVIDIA H200 NVL",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA A100-SXM4-40GB",
    "NVIDIA A100 80GB PCIe",
    "NVIDIA GeForce RTX 4090",
    "NVIDIA GeForce RTX 3090",
    "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA L40S",
    "NVIDIA L40",
)

_REPEATS = {
    sre_parse.MAX_REPEAT,
    sre_parse.MIN_REPEAT,
    getattr(sre_parse, "POSSESSIVE_REPEAT", None),
}
_REFUSED = {sre_parse.GROUPREF: "a backreference", sre_parse.GROUPREF_EXISTS: "a conditional"}


def _children(op: object, av: object) -> Iterator[object]:
    """The sub-patterns of one parsed item (each a SubPattern)."""
    if op in _REPEATS:
        yield av[2]  # type: ignore[index]
    elif op is sre_parse.SUBPATTERN:
        yield av[3]  # type: ignore[index]
    elif op is sre_parse.BRANCH:
        yield from av[1]  # type: ignore[index]
    elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
        yield av[1]  # type: ignore[index]
    elif op is getattr(sre_parse, "ATOMIC_GROUP", None):
        yield av


def _shape_problem(parsed: object) -> str | None:
    """Why the parsed pattern could backtrack for long, or None."""
    repeats = 0
    # (sub-pattern, inside a wide repeat)
    stack: list[tuple[object, bool]] = [(parsed, False)]
    while stack:
        sub, in_repeat = stack.pop()
        for op, av in sub:  # type: ignore[attr-defined]
            if op in _REFUSED:
                return f"{_REFUSED[op]} is refused"
            wide = op in _REPEATS and av[1] > 1  # type: ignore[index]
            if wide:
                repeats += 1
                if in_repeat:
                    return "a repeat inside a repeat is refused (it can backtrack exponentially)"
            if op is sre_parse.BRANCH and in_repeat:
                return "an alternation inside a repeat is refused (it can backtrack exponentially)"
            stack.extend((child, in_repeat or wide) for child in _children(op, av))
    if repeats > MAX_REPEATS:
        return f"{repeats} repeats (`*`, `+`, `{{m,n}}`); at most {MAX_REPEATS}"
    return None


@lru_cache(maxsize=4096)
def compile_pattern(text: str) -> re.Pattern[str] | str:
    """The compiled, case-insensitive pattern, or why it is refused (a one-line reason)."""
    if len(text) > MAX_PATTERN_CHARS:
        return f"{len(text)} characters; at most {MAX_PATTERN_CHARS}"
    try:
        parsed = sre_parse.parse(text, re.IGNORECASE)
        problem = _shape_problem(parsed)
        if problem is not None:
            return problem
        return re.compile(text, re.IGNORECASE)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        return f"not a regular expression: {exc.msg}{where}"
    except (RecursionError, OverflowError, ValueError) as exc:
        return f"not a regular expression: {type(exc).__name__}"


def matches(patterns: Iterable[str], name: str) -> bool:
    """Whether any usable pattern finds `name` (cut to MAX_NAME_CHARS); never raises."""
    name = name[:MAX_NAME_CHARS]
    for text in patterns:
        compiled = compile_pattern(text)
        if isinstance(compiled, re.Pattern) and compiled.search(name):
            return True
    return False


def literal_name(text: str) -> str | None:
    """The one name a fully literal pattern (`^NVIDIA H200$`) matches, or None."""
    compiled = compile_pattern(text)
    if not isinstance(compiled, re.Pattern):
        return None
    out = []
    for op, av in sre_parse.parse(text):
        if op is sre_parse.LITERAL:
            out.append(chr(av))
        elif op is not sre_parse.AT:
            return None
    return "".join(out) or None
