"""References: every reference names a record that exists and has the right kind.

A reference to a file that failed to load is FKB303, not FKB301: that file has its own findings,
and the reference is reported as what it is, so that the referencing record is never silently
clean (neither FKB303 nor the loading findings can be suppressed inline).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from typing import Any

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.kb import KnowledgeBase
from flopkb.load import dotted
from flopkb.model import AcceleratorRecord, ClassRecord, QuantityRecord, SourceRecord
from flopkb.paths import bundled_root


def unloaded_reference(
    ctx: CheckContext, rid: str, path: tuple[str | int, ...], target: str, what: str
) -> Finding | None:
    """FKB303 when `target` (or, for a claim, its record) is a file that failed to load."""
    unloaded = ctx.kb.unloaded
    file = unloaded.get(target) or unloaded.get(target.partition("/")[0])
    if file is None:
        return None
    return ctx.finding(
        "FKB303", rid, path, f"{what}: {target!r} is in a record that failed to load ({file})",
        "fix that file first: its own findings say why it does not load",
    )  # fmt: skip

_NOUN = {
    AcceleratorRecord: "an accelerator",
    QuantityRecord: "a quantity",
    SourceRecord: "a source",
    ClassRecord: "a class (operator or model)",
}


def _references(ctx: CheckContext) -> Iterator[tuple[str, tuple[str | int, ...], str, type]]:
    """(record id, path of the reference, target id, expected record type) for every reference."""
    kb = ctx.kb
    for rid, record in kb.classes.items():
        for i, acc in enumerate(record.affected_by_hardware):
            yield rid, ("affected_by_hardware", i), acc, AcceleratorRecord
        for i, src in enumerate(record.sources):
            yield rid, ("sources", i, "id"), src.id, SourceRecord
        for i, other in enumerate(record.related):
            yield rid, ("related", i), other, ClassRecord
        for i, row in enumerate(record.flop.hardware_parameters):
            base = ("flop", "hardware_parameters", i)
            yield rid, (*base, "quantity"), row.quantity, QuantityRecord
            if row.source is not None:
                yield rid, (*base, "source", "id"), row.source.id, SourceRecord
    for rid, acc in kb.accelerators.items():
        for qid, spec in acc.specs.items():
            yield rid, ("specs", qid), qid, QuantityRecord
            # a spec may cite the evidence that read it from the device (flopkb.check.device)
            if spec.source is not None and spec.source.id not in kb.evidence:
                yield rid, ("specs", qid, "source", "id"), spec.source.id, SourceRecord
        for i, src in enumerate(acc.sources):
            yield rid, ("sources", i, "id"), src.id, SourceRecord


class _Hints:
    """Did-you-mean for unresolved ids, cheap at 10^4 records.

    Only ids of the expected kind with the same first letter are compared, and of those at most
    `POOL` sharing the longest prefix with the target (a typo rarely changes the start of an id).
    At most `MAX_HINTS` distinct targets get one per run (the resource budget).
    """

    POOL = 64
    # did-you-mean hints computed per run (each compares up to POOL ids with difflib)
    MAX_HINTS = 2_000

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.buckets: dict[tuple[type, str], list[str]] = {}
        self.memo: dict[tuple[str, type], str | None] = {}

    def closest(self, target: str, expected: type) -> str | None:
        if (target, expected) not in self.memo and len(self.memo) >= self.MAX_HINTS:
            # a record of 50,000 unresolved ids: findings are cut at 100 per file anyway
            return None
        if (target, expected) not in self.memo:
            key = (expected, target[:1])
            if key not in self.buckets:
                ids = self.kb.records_of(expected)
                self.buckets[key] = sorted(i for i in ids if i[:1] == target[:1])
            pool = self.buckets[key]
            if len(pool) > self.POOL:
                pool = sorted(pool, key=lambda i: -_shared_prefix(i, target))[: self.POOL]
            close = difflib.get_close_matches(target, pool, n=1)
            self.memo[(target, expected)] = close[0] if close else None
        return self.memo[(target, expected)]


def _shared_prefix(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _bundled_hint(kb: Any, target: str, expected: type) -> str | None:
    """A record copied from the bundled KB names others that are still there (`h200-sxm` cites
    `nvidia-h200-datasheet`): say so, and how to bring it in, rather than guess a near id."""
    root = getattr(kb, "root", None)
    if root is None or os.path.realpath(root) == os.path.realpath(bundled_root()):
        return None
    from flopkb.bundle import bundled_hint

    return bundled_hint(target, expected)


def _article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


@check
def references_resolve(ctx: CheckContext) -> Iterator[Finding]:
    """FKB301/FKB302: the target exists and is of the expected kind."""
    kb = ctx.kb
    hints = _Hints(kb)
    for rid, path, target, expected in _references(ctx):
        found = kb.records.get(target)
        if not isinstance(found, expected):
            yield from ctx.isolated(rid, _unresolved(ctx, hints, rid, path, target, expected))


def _unresolved(
    ctx: CheckContext, hints: _Hints, rid: str, path: tuple[str | int, ...], target: str,
    expected: type,
) -> Iterator[Finding]:
    """FKB301 or FKB302 for one reference that does not name a record of the expected kind."""
    kb = ctx.kb
    found = kb.records.get(target)
    noun = _NOUN[expected]
    field = dotted(path)
    if found is None:
        if target in kb.unloaded:
            yield ctx.finding(
                "FKB303", rid, path,
                f"{field}: {target!r} is a record that failed to load ({kb.unloaded[target]}); "
                f"expected {noun}",
                "fix that file first: its own findings say why it does not load",
            )  # fmt: skip
            return
        hint = _bundled_hint(kb, target, expected)
        if hint is None:
            close = hints.closest(target, expected)
            hint = f"did you mean {close!r}?" if close else None
        yield ctx.finding(
            "FKB301", rid, path, f"{field}: {target!r} is not a record; expected {noun}", hint
        )
    else:
        yield ctx.finding(
            "FKB302", rid, path,
            f"{field}: {target!r} is {_article(found.kind.value)} record "
            f"({kb.file_of(target)}); expected {noun}",
        )  # fmt: skip
