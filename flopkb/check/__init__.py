"""Every check over a loaded KB; `run_checks(kb)` runs them all and returns the findings.

Check modules register their checks with `@check` when imported; the rules they report are the
catalogue's (`flopkb.rules`).
"""

from __future__ import annotations

import importlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from flopkb.check import base
from flopkb.check.base import CheckContext
from flopkb.findings import Finding, sorted_findings
from flopkb.kb import KnowledgeBase, gc_paused, workers_for
from flopkb.rules import finding_of

# In data-flow order: structure before references before provenance.
CHECK_MODULES = (
    "structure", "characters", "digits", "references", "formulas", "provenance", "units",
    "matching", "device", "evidence", "experiments", "unjudged", "architectures", "plausibility",
    "graph", "signatures",
)  # fmt: skip


def load_checks() -> None:
    """Import every check module, which registers its checks."""
    for name in CHECK_MODULES:
        importlib.import_module(f"flopkb.check.{name}")


def _run_one(ctx: CheckContext, index: int) -> list[Finding]:
    """Run CHECKS[index]; a crashing check becomes an FKB199 finding, never an exception.

    Checks guard each record themselves (`CheckContext.isolated`), so a record that trips a bug
    costs its own findings only; what escapes that (a shared precomputation) still keeps the
    findings the check yielded before it failed.
    """
    kb = ctx.kb
    # read at call time through the module: tests add a check by replacing the list
    fn = base.CHECKS[index]
    found: list[Finding] = []
    try:
        for finding in fn(ctx):
            found.append(finding)
    except Exception as exc:
        name = f"{fn.__module__}.{fn.__qualname__}"
        found.append(
            finding_of(
                "FKB199", str(kb.root or ""), 0, 0, None,
                f"internal error in check {name}: {type(exc).__name__}: {str(exc)[:200]}",
                "this is a bug in flopkb, not in the records; please report it",
            )
        )  # fmt: skip
    return found


# The context a forked check worker inherits (set just before the pool forks; never pickled).
_FORKED_CTX: CheckContext | None = None


def _run_forked(index: int) -> list[Finding]:
    assert _FORKED_CTX is not None
    return _run_one(_FORKED_CTX, index)


def run_checks(kb: KnowledgeBase) -> list[Finding]:
    """Run every registered check once over the whole KB and return the sorted findings.

    On a large KB the checks are spread over forked workers that inherit the loaded KB (nothing
    is pickled but the findings coming back); each check still sees the whole KB.
    """
    load_checks()
    # one context for all checks, so what they share (the quantity evaluator) is built once
    ctx = CheckContext(kb)
    # the cyclic GC would rescan every loaded record on each of its passes while the checks
    # allocate (composing files again to locate findings: bench/validate_scale.py, class-only
    # KB); checks build no reference cycles worth collecting mid-run
    with gc_paused():
        return _run_all(ctx)


def _run_all(ctx: CheckContext) -> list[Finding]:
    global _FORKED_CTX
    kb = ctx.kb
    workers = min(workers_for(len(kb.records)), len(base.CHECKS))
    findings: list[Finding] = []
    if workers <= 1:
        for index in range(len(base.CHECKS)):
            findings += _run_one(ctx, index)
        return sorted_findings(findings)
    _FORKED_CTX = ctx
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for part in pool.map(_run_forked, range(len(base.CHECKS))):
                findings += part
    finally:
        _FORKED_CTX = None
    return sorted_findings(findings)
