"""Which evidence is stale (its kernel sources changed since it ran), as the verify package decides.

The graph never decides staleness itself: it asks `flopkb.verify` (which owns kernel hashing).
When no staleness function is installed, `stale_evidence` returns None, meaning "unknown", and the
status query says stale detection is unavailable rather than reporting nothing as stale.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from flopkb.kb import KnowledgeBase

# `stale_evidence(kb)` of the verify package: items with `.evidence` (an id) and `.describe()`.
PROVIDER = ("flopkb.verify.hashing", "stale_evidence")


def _provider() -> Callable[[KnowledgeBase], Iterable[Any]] | None:
    module, name = PROVIDER
    try:
        fn = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return fn if callable(fn) else None


def stale_evidence(kb: KnowledgeBase) -> dict[str, str] | None:
    """Stale evidence id -> why (which kernel files changed); None when detection is unavailable."""
    fn = _provider()
    if fn is None:
        return None
    out: dict[str, str] = {}
    for item in fn(kb):
        describe = getattr(item, "describe", None)
        out[item.evidence] = describe() if callable(describe) else ""
    return out
