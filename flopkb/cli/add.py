"""`flopkb add ID...`: bring bundled records into the KB with what they need (flopkb.bundle)."""

from __future__ import annotations

from typing import Annotated

import typer

from flopkb.bundle import AddError, add_records
from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    fail,
    failing_on,
    kb_location,
    plain,
    print_kb,
)
from flopkb.plural import count


def add(
    ctx: typer.Context,
    ids: Annotated[
        list[str], typer.Argument(metavar="ID...", help="bundled record ids (h200-sxm, ...)")
    ],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Copy bundled records into this KB with everything they reference (sources, quantities,
    the evidence a spec cites, a measured row's evidence): never replacing a file."""
    where = kb_location(ctx)
    if where.bundled:
        fail("no KB of your own found from here (flopkb add writes into one): run "
             "`flopkb init DIR` first, or pass --kb DIR")  # fmt: skip
    with failing_on(AddError):
        result = add_records(where.root, ids)
    if fmt is OutputFormat.json:
        return emit_json(result.as_dict())
    data = result.as_dict()
    for name in data["added"]:  # type: ignore[union-attr]
        console.print(plain(f"added {name}"))
    if result.kept:
        console.print(plain(f"kept {count(len(result.kept), 'record')} the KB has (its own "
                            f"versions stay): {', '.join(result.kept)}"))
    console.print(plain(f"{count(len(result.added), 'file')} added; next: flopkb validate"))
    print_kb(ctx)
