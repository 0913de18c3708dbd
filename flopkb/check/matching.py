"""Accelerator `match` patterns: each compiles under the bounds of `flopkb.grammar.matching`, none
claims every GPU, and no device name is claimed by two accelerators (verify would pick one by id
order)."""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.grammar.matching import (
    KNOWN_DEVICE_NAMES,
    MAX_NAME_CHARS,
    MAX_WITNESSES,
    PROBES,
    compile_pattern,
    literal_name,
    matches,
)

# pattern searches for the overlap check, at most
MAX_SEARCHES = 300_000
# overlap findings per accelerator (a pattern claiming every GPU overlaps with all of them)
MAX_OVERLAPS_SHOWN = 10


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _witnesses(ctx: CheckContext) -> list[str]:
    """Names to probe every accelerator's patterns with: known device names, GPU names the
    evidence recorded, literal patterns, then ids and titles (bounded)."""
    kb = ctx.kb
    names: dict[str, None] = dict.fromkeys(KNOWN_DEVICE_NAMES)
    for ev in kb.evidence.values():
        gpu = ev.machine.get("gpu") if isinstance(ev.machine, dict) else None
        if isinstance(gpu, str):
            names.setdefault(gpu[:MAX_NAME_CHARS])
    for acc in kb.accelerators.values():
        for text in acc.match:
            literal = literal_name(text)
            if literal is not None:
                names.setdefault(literal[:MAX_NAME_CHARS])
    for acc_id, acc in sorted(kb.accelerators.items()):
        names.setdefault(acc_id)
        names.setdefault(acc.title[:MAX_NAME_CHARS])
    return list(names)[:MAX_WITNESSES]


@check
def match_patterns(ctx: CheckContext) -> Iterator[Finding]:
    """FKB420/421/422 over every accelerator's `match` list."""
    kb = ctx.kb
    usable: dict[str, list[str]] = {}
    for acc_id, acc in sorted(kb.accelerators.items()):
        for i, text in enumerate(acc.match):
            compiled = compile_pattern(text)
            if isinstance(compiled, str):
                yield ctx.finding(
                    "FKB420", acc_id, ("match", i), f"match[{i}]: {_short(text)!r}: {compiled}",
                    "a case-insensitive regular expression such as '^NVIDIA H200$'",
                )  # fmt: skip
            elif any(compiled.search(probe) for probe in PROBES):
                yield ctx.finding(
                    "FKB421", acc_id, ("match", i),
                    f"match[{i}]: {_short(text)!r} matches any GPU name",
                    "anchor the device's own name: '^NVIDIA H200$'",
                )  # fmt: skip
        # a pattern claiming every GPU still takes part in the overlaps below
        usable[acc_id] = [t for t in acc.match if not isinstance(compile_pattern(t), str)]
    yield from _overlaps(ctx, usable)


def _overlaps(ctx: CheckContext, usable: dict[str, list[str]]) -> Iterator[Finding]:
    """FKB422 on both accelerators of each pair, with the first device name they both claim."""
    claimed: dict[str, list[str]] = {}
    patterns = sum(len(texts) for texts in usable.values())
    # searches in all stay under MAX_SEARCHES (a KB of 10^4 accelerators): the known device
    # names come first among the witnesses and are always probed
    room = max(len(KNOWN_DEVICE_NAMES), MAX_SEARCHES // max(patterns, 1))
    for name in _witnesses(ctx)[:room]:
        claimed[name] = [acc_id for acc_id, texts in usable.items() if matches(texts, name)]
    reported: set[tuple[str, str]] = set()
    per_record: dict[str, int] = {}
    for name, accs in claimed.items():
        for a in accs:
            for b in accs:
                if a == b or (a, b) in reported or per_record.get(a, 0) >= MAX_OVERLAPS_SHOWN:
                    continue
                reported.add((a, b))
                per_record[a] = per_record.get(a, 0) + 1
                yield ctx.finding(
                    "FKB422", a, ("match",),
                    f"{_short(name)!r} is claimed by {a} and by {b}: verify would take the first "
                    "by id order",
                    "make each pattern match only its own device's name",
                )  # fmt: skip
