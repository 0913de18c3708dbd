"""Who references whom, both ways, for a pre-commit run: the records that name a changed or
deleted id, and the records a changed or deleted record names (evidence -> its claim's record,
accelerator -> sources); they live in files the hook was not given."""

from __future__ import annotations

import re
from collections.abc import Iterator

from flopkb.check.base import CheckContext
from flopkb.check.references import _references
from flopkb.kb import KnowledgeBase

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _outgoing(kb: KnowledgeBase) -> Iterator[tuple[str, str]]:
    """(record id, id it references) for every reference of the loaded records."""
    for rid, _, target, _ in _references(CheckContext(kb)):
        yield rid, target
    for rid, q in kb.quantities.items():
        for name in _NAME.findall(q.formula or ""):
            yield rid, name
    for rid, record in kb.classes.items():
        for row in record.flop.hardware_parameters:
            for name in _NAME.findall(row.formula or ""):
                yield rid, name
    for rid, ev in kb.evidence.items():
        if ev.claim:
            yield rid, ev.claim.partition("/")[0]
        if ev.accelerator:
            yield rid, ev.accelerator


def referencing(kb: KnowledgeBase, ids: set[str]) -> set[str]:
    """Ids of the records that reference any of `ids` (directly)."""
    return {rid for rid, target in _outgoing(kb) if target in ids and rid not in ids}


def referenced_by(kb: KnowledgeBase, ids: set[str]) -> set[str]:
    """Ids that the records `ids` reference (directly): what an edit or deletion of them can
    break, e.g. the claim record whose `measured` row an evidence record confirms."""
    return {target for rid, target in _outgoing(kb) if rid in ids and target not in ids}
