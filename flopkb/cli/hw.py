"""`flopkb hw show ID` and `flopkb hw compare A B`: datasheet specs and computed parameters."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from flopkb.cli.common import FormatOption, OutputFormat, console, emit_json, fail, kb_root
from flopkb.cli.help import example
from flopkb.cli.tables import IdTable
from flopkb.hardware import UnknownRecord, hw_compare, hw_show
from flopkb.kb import load_kb

app = typer.Typer(
    help="datasheet specs and computed hardware parameters",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _source(source: dict[str, Any] | None) -> str:
    if not source:
        return "-"
    return f"{source['id']}, {source['locator']}" if source.get("locator") else source["id"]


@app.command("show", epilog=example("flopkb hw show h200-sxm"))
def show(
    ctx: typer.Context,
    accelerator: Annotated[str, typer.Argument(help="accelerator record id, e.g. h200-sxm")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Datasheet specs with their sources, and computed parameters with formula and unit."""
    kb, _ = load_kb(kb_root(ctx))
    try:
        data = hw_show(kb, accelerator)
    except UnknownRecord as exc:
        fail(str(exc))
    if fmt is OutputFormat.json:
        emit_json(data)
        return
    specs = IdTable(title=f"{data['id']}: {data['title']} (datasheet specs)")
    for column in ("quantity", "value", "unit", "source", "note"):
        specs.add_column(column, overflow="fold")
    for qid, s in data["specs"].items():
        specs.add_row(qid, _num(s["value"]), s["unit"], _source(s["source"]), s.get("note", ""))
    computed = IdTable(title=f"{data['id']}: computed parameters")
    for column in ("quantity", "value", "unit", "formula", "note"):
        computed.add_column(column, overflow="fold")
    for qid, c in data["computed"].items():
        computed.add_row(qid, _num(c["value"]), c["unit"], c["formula"], c.get("note", ""))
    console.print(specs)
    console.print(computed)
    if data["measured"]:
        measured = IdTable(title=f"{data['id']}: measured ceilings (evidence)")
        for column in ("experiment", "value", "unit", "evidence"):
            measured.add_column(column)
        for exp, m in data["measured"].items():
            measured.add_row(exp, _num(m["value"]), m["unit"] or "", m["evidence"])
        console.print(measured)


@app.command("compare", epilog=example("flopkb hw compare h100-sxm h200-sxm"))
def compare(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(help="first accelerator id")],
    b: Annotated[str, typer.Argument(help="second accelerator id")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """What differs between two parts (ratio b/a) and which claims depend on what differs."""
    kb, _ = load_kb(kb_root(ctx))
    try:
        data = hw_compare(kb, a, b)
    except UnknownRecord as exc:
        fail(str(exc))
    if fmt is OutputFormat.json:
        emit_json(data)
        return
    table = IdTable(title=f"{a} vs {b} (ratio = {b} / {a}; differing rows first)")
    for column in ("quantity", "kind", "unit", a, b, "ratio"):
        table.add_column(column)
    ordered = sorted(data["quantities"], key=lambda r: not r["differs"])
    for r in ordered:
        style = "bold" if r["differs"] else "dim"
        # a ratio hw_compare could not give (it overflows, or divides by ~0) points to the note
        ratio = "n/a*" if r.get("note") else _num(r["ratio"])
        table.add_row(
            r["quantity"], r["kind"], r["unit"], _num(r["a"]), _num(r["b"]), ratio, style=style,
        )  # fmt: skip
    console.print(table)
    notes = sorted({r["note"] for r in ordered if r.get("note")})
    for note in notes:
        console.print(f"* {note}", markup=False, highlight=False)
    claims = IdTable(title=f"claims that depend on what differs ({len(data['claims'])})")
    for column in ("claim", "quantity", "via", "basis", "magnitude"):
        claims.add_column(column, overflow="fold")
    for c in data["claims"]:
        claims.add_row(c["claim"], c["quantity"], ", ".join(c["via"]), c["basis"], c["magnitude"])
    console.print(claims)
