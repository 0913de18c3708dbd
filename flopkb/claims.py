"""Every claim of the KB as a flat row, with the latest verdict per accelerator from evidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flopkb.architecture.show import derived_values
from flopkb.evidence.pooled import Pooled, pooled
from flopkb.hardware.derived import computed_values
from flopkb.hardware.model import HardwareModel, UnknownRecord
from flopkb.kb import KnowledgeBase
from flopkb.model import Basis, HardwareParameter


def list_claims(
    kb: KnowledgeBase,
    record: str | None = None,
    quantity: str | None = None,
    basis: str | Basis | None = None,
    accelerator: str | None = None,
    lacking: Mapping[str, list[str]] | None = None,
) -> list[dict[str, Any]]:
    """Claims as `[{"claim","record","quantity","magnitude","basis","verdicts":{acc: verdict}}]`.

    A `derived` row with a formula also has `computed`: its formula on each accelerator its class
    lists, `{acc: {"value", "agrees"[, "note"]}}` (flopkb.hardware.derived; `agrees` false is
    FKB213); other rows have `computed: null`. `not_applicable_on`: the parts of `lacking` (claim
    id -> accelerators that lack a quantity it rests on, `flopkb.check.uses.not_applicable`) the
    row is out of reach on. `not_verifiable`: why verify does not judge the row
    everywhere (its link's `not_applicable` reason or `judged_on` parts), else null. A row with
    `derived_from` has `computed_from_architectures`,
    the values computed from the architecture records (flopkb.architecture.show); else null.

    A verdict is pooled over every trusted, fresh run on that accelerator
    (`flopkb.evidence.pooled`): `disagreeing` when they differ. `runs` keeps, per accelerator, the
    pooled verdict's run count, agreement, each run's own verdict and `pooled`: the figure of all
    the runs' rounds merged and judged again (null with fewer than two runs that store rounds);
    `pooled_text` says it in words.

    Filters: `record` (class id), `quantity` (the row's quantity id, exactly), `basis`, and
    `accelerator` (claims whose class lists it in `affected_by_hardware`; verdicts narrowed to it).
    An unknown record, quantity or accelerator id raises `UnknownRecord`: a typo is not an empty
    result.
    """
    if record is not None and record not in kb.classes:
        raise UnknownRecord("class", record, kb.classes)
    if quantity is not None and quantity not in kb.quantities:
        raise UnknownRecord("quantity", quantity, kb.quantities)
    if accelerator is not None and accelerator not in kb.accelerators:
        raise UnknownRecord("accelerator", accelerator, kb.accelerators)
    wanted_basis = Basis(basis) if basis is not None else None
    pooled_by_claim: dict[str, dict[str, Any]] = {}
    for (cid, acc), p in pooled(kb).items():
        pooled_by_claim.setdefault(cid, {})[acc] = p
    rows: list[dict[str, Any]] = []
    model = HardwareModel(kb)
    for claim_id, rec, row in kb.claims():
        if record is not None and rec.id != record:
            continue
        if quantity is not None and row.quantity != quantity:
            continue
        if wanted_basis is not None and row.basis != wanted_basis:
            continue
        if accelerator is not None and accelerator not in rec.affected_by_hardware:
            continue
        found = pooled_by_claim.get(claim_id, {})
        if accelerator is not None:
            found = {acc: p for acc, p in found.items() if acc == accelerator}
        computed = computed_values(model, rec, row)
        if computed is not None and accelerator is not None:
            computed = {acc: c for acc, c in computed.items() if acc == accelerator}
        rows.append(
            {
                "claim": claim_id,
                "record": rec.id,
                "quantity": row.quantity,
                "magnitude": row.magnitude,
                "basis": row.basis.value,
                "verdicts": {acc: p.verdict for acc, p in found.items()},
                "verdict_text": {acc: p.text() for acc, p in found.items()},
                "pooled_text": {acc: p.figure.text() for acc, p in found.items() if p.figure},
                "why_no_figure": {acc: why for acc, p in found.items()
                                  if (why := why_no_figure(p)) is not None},
                "runs": {acc: p.as_dict() for acc, p in found.items()},
                "implementation_sensitive": [a for a, p in found.items()
                                             if p.implementation_sensitive],
                "computed": None if computed is None
                else {acc: c.as_dict() for acc, c in computed.items()},
                "computed_from_architectures": _computed(kb, row),
                "not_verifiable": not_verifiable(row),
                "not_applicable_on": [a for a in (lacking or {}).get(claim_id, [])
                                      if accelerator in (None, a)],
            }
        )
    return rows


# a reason is cut to its first clause (the rule that refused; the rest is notes) and this length
WHY_CHARS = 240


def first_clause(reason: str | None) -> str:
    """A verdict's reason up to its first "; ": the rule that decided it (judges append their
    notes after it)."""
    return (reason or "").split("; ")[0].strip()


def why_no_figure(p: Pooled) -> str | None:
    """Why a pooled verdict carries no figure (error, inconclusive): the newest run's reason,
    its first clause (a verdict that measured nothing stands on the newest run alone,
    `flopkb.evidence.pooled`); None where there is a figure."""
    if p.figure is not None or p.verdict not in ("error", "inconclusive") or not p.runs:
        return None
    newest = p.runs[0]
    reason = first_clause(newest.reason)
    if not reason:
        return None
    text = reason if len(reason) <= WHY_CHARS else reason[:WHY_CHARS - 1] + "…"
    return f"newest run: {text}"


def not_verifiable(row: HardwareParameter) -> str | None:
    """Why `flopkb verify` does not judge the row everywhere, by the row's own link: its
    `not_applicable` reason, or the parts a part-specific link is judged on; else None."""
    link = row.verify
    if link is None:
        return None
    if link.not_applicable is not None:
        return f"not applicable: {link.not_applicable}"
    if link.judged_on:
        return f"judged on {', '.join(link.judged_on)} only"
    return None


def _computed(kb: KnowledgeBase, row: HardwareParameter) -> list[dict[str, Any]] | None:
    """The values a row's `derived_from` names, computed from architecture records (else None)."""
    if row.derived_from is None:
        return None
    return [
        {"value": v.value, "unit": v.unit, "what": v.label, "error": v.error}
        for v in derived_values(kb, row.derived_from)
    ]
