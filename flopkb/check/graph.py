"""Checks over the dependency graph: orphan quantities and sources, claims not applicable on a part.

Cycles among computed quantities are FKB403 (check/formulas.py); they are not checked again here.
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.check.uses import not_applicable, used_quantities, used_sources
from flopkb.findings import Finding


@check
def graph_checks(ctx: CheckContext) -> Iterator[Finding]:
    """FKB601-603: the graph's answers, read off the KB without building it (`check.uses`)."""
    used = used_quantities(ctx.kb)
    for qid, q in sorted(ctx.kb.quantities.items()):
        # A computed quantity is evaluated on every accelerator (`flopkb hw show`): never an orphan.
        if q.formula is None and qid not in used:
            yield ctx.finding(
                "FKB601", qid, ("id",),
                f"quantity {qid} is used by nothing: no accelerator specifies it, no claim depends "
                "on it, no formula uses it",
                "add it to the accelerators' specs, or remove the record",
            )  # fmt: skip
    cited = used_sources(ctx.kb)
    for sid in sorted(ctx.kb.sources):
        if sid not in cited:
            yield ctx.finding(
                "FKB602", sid, ("id",),
                f"source {sid} is cited by nothing (no claim, class or accelerator spec)",
                "cite it where it backs a claim or a spec, or remove the record",
            )  # fmt: skip
    row_index: dict[str, dict[str, int]] = {}
    for claim, accelerators in not_applicable(ctx.kb).items():
        record_id, _, row_id = claim.partition("/")
        record = ctx.kb.classes[record_id]
        if record_id not in row_index:
            # first row of each id (as the graph keeps it), indexed once per record
            rows = record.flop.hardware_parameters
            row_index[record_id] = {r.id: i for i, r in reversed(list(enumerate(rows)))}
        index = row_index[record_id][row_id]
        row = record.flop.hardware_parameters[index]
        for acc in accelerators:
            yield ctx.finding(
                "FKB603", record_id, ("flop", "hardware_parameters", index, "quantity"),
                f"claim {claim} is not applicable on {acc}: {row.quantity} (or an input of it) "
                f"is null there",
                f"expected: verify reports it not-applicable on {acc}; drop {acc} from "
                "affected_by_hardware if the class does not run there at all",
            )  # fmt: skip
