"""`flopkb claims`: every claim with its quantity, magnitude, basis and latest verdicts."""

from __future__ import annotations

from typing import Annotated

import typer

from flopkb.architecture.show import shown
from flopkb.check.uses import not_applicable
from flopkb.claims import list_claims
from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    failing_on,
    loaded_kb,
    print_kb,
)
from flopkb.cli.tables import IdTable
from flopkb.hardware.derived import summary
from flopkb.hardware.model import UnknownRecord
from flopkb.model import Basis
from flopkb.plural import count


def claims(
    ctx: typer.Context,
    record: Annotated[str | None, typer.Option("--record", help="only this class record")] = None,
    quantity: Annotated[
        str | None, typer.Option("--quantity", help="only rows on this quantity")
    ] = None,
    basis: Annotated[Basis | None, typer.Option("--basis", help="only this basis")] = None,
    accelerator: Annotated[
        str | None, typer.Option("--accelerator", help="only claims that apply to this part")
    ] = None,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Every claim: record, quantity, magnitude, basis, and its verdict per accelerator pooled over
    all its runs there (`confirmed (2/2 runs)`; `disagreeing` when they differ)."""
    # the claims of records that loaded are still listed; the broken ones are skipped
    kb = loaded_kb(ctx, "records that failed to load are left out")
    with failing_on(UnknownRecord):
        # parts that lack a quantity a claim rests on (a null spec: no INT4 tensor cores on
        # Hopper), read off the KB by the graph checks' one pass
        rows = list_claims(
            kb, record=record, quantity=quantity, basis=basis, accelerator=accelerator,
            lacking=not_applicable(kb),
        )
    if fmt is OutputFormat.json:
        return emit_json(rows)
    table = IdTable(title=count(len(rows), "claim"))
    for column in ("claim", "quantity", "magnitude", "basis", "verdicts"):
        # a magnitude split over two lines ("crossover at" / "2K") misreads
        table.add_column(column, whole=column in ("magnitude", "basis"))
    for r in rows:
        touchy = set(r.get("implementation_sensitive") or [])
        pooled = r.get("pooled_text") or {}
        why = r.get("why_no_figure") or {}
        verdicts = ", ".join(
            f"{acc}: {text}" + (" (implementation-sensitive)" if acc in touchy else "")
            # the runs' rounds merged: the interval that holds between runs, not within one
            + (f"; pooled {pooled[acc]}" if acc in pooled else "")
            # an error or inconclusive verdict says why it has no figure
            + (f" ({why[acc]})" if acc in why else "")
            for acc, text in r["verdict_text"].items())
        # a row no single GPU judges by design says why, where a bare "-" would read as "not run
        # yet"
        if r.get("not_verifiable"):
            verdicts = "; ".join(x for x in (verdicts, r["not_verifiable"]) if x)
        # out of reach where the part lacks the quantity: said, instead of a bare "-"
        if r["not_applicable_on"]:
            why = (f"not applicable on {', '.join(r['not_applicable_on'])}: {r['quantity']} (or "
                   "an input of it) is null there")
            verdicts = "; ".join(x for x in (verdicts, why) if x)
        verdicts = verdicts or "-"
        magnitude = r["magnitude"]
        if r.get("computed_from_architectures"):
            # the figure beside what the architecture records give for it
            got = "; ".join("n/a" if c["value"] is None else shown(c["value"], c["unit"], 3)
                            for c in r["computed_from_architectures"])  # fmt: skip
            magnitude = f"{magnitude} (computed {got})"
        # a derived row shows what its formula computes, beside the basis that claims it
        basis = r["basis"] + (f" ({summary(r['computed'])})" if r.get("computed") else "")
        table.add_row(r["claim"], r["quantity"], magnitude, basis, verdicts)
    console.print(table)
    print_kb(ctx)
