"""`flopkb hw show ID` and `flopkb hw compare A B`: datasheet specs and computed parameters."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    failing_on,
    kb_root,
    print_kb,
)
from flopkb.cli.help import example
from flopkb.cli.tables import IdTable
from flopkb.hardware.model import UnknownRecord
from flopkb.hardware.show import hw_compare, hw_show
from flopkb.kb import load_kb

app = typer.Typer(
    help="datasheet specs and computed hardware parameters",
    no_args_is_help=True,
    rich_markup_mode=None,
)


# columns whose cells never break: a figure or a magnitude split over two lines misreads
WHOLE = frozenset({"value", "unit", "basis", "magnitude"})


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:g}"


def _source(source: dict[str, Any] | None) -> str:
    if not source:
        return "-"
    return f"{source['id']}, {source['locator']}" if source.get("locator") else source["id"]


def _band(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"{_num(low)}-{_num(high)}"
    return f"up to {_num(high)}" if high is not None else "-"


@app.command("show", epilog=example("flopkb hw show h200-sxm"))
def show(
    ctx: typer.Context,
    accelerator: Annotated[str, typer.Argument(help="accelerator record id, e.g. h200-sxm")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Datasheet specs with their sources, and computed parameters with formula and unit."""
    kb, _ = load_kb(kb_root(ctx))
    with failing_on(UnknownRecord):
        data = hw_show(kb, accelerator)
    if fmt is OutputFormat.json:
        return emit_json(data)
    specs = IdTable(title=f"{data['id']}: {data['title']} (datasheet specs)")
    for column in ("quantity", "value", "unit", "source", "note"):
        specs.add_column(column, whole=column in WHOLE)
    for qid, s in data["specs"].items():
        specs.add_row(qid, _num(s["value"]), s["unit"], _source(s["source"]), s.get("note", ""))
    computed = IdTable(title=f"{data['id']}: computed parameters")
    for column in ("quantity", "value", "unit", "formula", "note"):
        computed.add_column(column, whole=column in WHOLE)
    for qid, c in data["computed"].items():
        computed.add_row(qid, _num(c["value"]), c["unit"], c["formula"], c.get("note", ""))
    console.print(specs)
    if data["computed"]:
        console.print(computed)
    else:
        # an empty table reads as a rendering fault; say what is missing instead
        console.print(
            f"{data['id']}: no computed parameters (no computed quantity evaluates on its specs)",
            markup=False, highlight=False,
        )  # fmt: skip
    if data["measured"]:
        measured = IdTable(title=f"{data['id']}: measured ceilings (median; band from p90/p10)")
        for column in ("ceiling", "value", "unit", "band", "evidence"):
            measured.add_column(column, whole=column in WHOLE or column == "band")
        for name, m in data["measured"].items():
            band = _band(m["low"], m["high"])
            measured.add_row(name, _num(m["value"]), m["unit"] or "", band, m["evidence"])
        console.print(measured)
    if data.get("derived"):
        derived = IdTable(title=f"{data['id']}: derived claims computed on this part")
        for column in ("claim", "formula", "computed", "magnitude", "agrees"):
            derived.add_column(column, whole=column in {"computed", "magnitude"})
        for d in data["derived"]:
            agrees = {True: "yes", False: "NO", None: "-"}[d["agrees"]]
            if d.get("note"):
                agrees += f" ({d['note']})"
            derived.add_row(d["claim"], d["formula"], _num(d["value"]), d["magnitude"], agrees)
        console.print(derived)
    print_kb(ctx)


@app.command("compare", epilog=example("flopkb hw compare h100-sxm h200-sxm"))
def compare(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(help="first accelerator id")],
    b: Annotated[str, typer.Argument(help="second accelerator id")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """What differs between two parts (ratio b/a) and which claims depend on what differs."""
    kb, _ = load_kb(kb_root(ctx))
    with failing_on(UnknownRecord):
        data = hw_compare(kb, a, b)
    if fmt is OutputFormat.json:
        return emit_json(data)
    table = IdTable(title=f"{a} vs {b} (ratio = {b} / {a}; differing rows first)")
    for index, column in enumerate(("quantity", "kind", "unit", a, b, "ratio")):
        table.add_column(column, whole=index >= 2)
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
        claims.add_column(column, whole=column in WHOLE)
    for c in data["claims"]:
        claims.add_row(c["claim"], c["quantity"], ", ".join(c["via"]), c["basis"], c["magnitude"])
    console.print(claims)
    print_kb(ctx)
