"""`flopkb graph`: questions asked of the dependency graph of hardware effects.

Every query command takes `--format text|json` (json prints exactly what the library returns);
`export` takes `--format json|graphml|dot`, the format of the exported graph itself.
IDs may be bare (`hbm_bandwidth`, `h200-sxm`, `mamba2-ssd/ssd-vs-fused-scan`) or prefixed with
their kind (`quantity:hbm_bandwidth`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.tree import Tree

from flopkb.atomic import atomic_write_text, check_target
from flopkb.cli.common import (
    FollowSymlinksOption,
    ForceOption,
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    err_console,
    fail,
    loaded_kb,
    plain,
    print_kb,
    safe_writes,
    write_policy,
)
from flopkb.cli.help import example
from flopkb.cli.tables import IdTable
from flopkb.graph import queries
from flopkb.graph.export import FORMATS
from flopkb.graph.export import export as export_graph
from flopkb.graph.queries import GraphQueryError, KBGraph
from flopkb.graph.render import PictureTooLarge, RenderError
from flopkb.graph.render import render as render_graph
from flopkb.plural import count

app = typer.Typer(
    help="Which claims depend on which hardware quantities: impact, diff, what-if, picture.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

T = TypeVar("T")


class ExportFormat(str, Enum):
    json = "json"
    graphml = "graphml"
    dot = "dot"


assert tuple(f.value for f in ExportFormat) == FORMATS


def _graph(ctx: typer.Context) -> KBGraph:
    return KBGraph.from_kb(loaded_kb(ctx, "the graph holds the records that loaded"))


def _run(fn: Callable[[], T]) -> T:
    """Call a library query; its errors (unknown id, wrong kind, bad value): one line, exit 2."""
    try:
        return fn()
    except PictureTooLarge:
        raise
    except (GraphQueryError, RenderError) as exc:
        fail(str(exc))


def _table(title: str, columns: list[str], whole: tuple[int, ...] = ()) -> IdTable:
    """Ids fold at their `/` rather than being cut; the columns at the indexes `whole` (figures,
    magnitudes) never break at all."""
    table = IdTable(title=title, title_justify="left")
    for index, col in enumerate(columns):
        table.add_column(col, whole=index in whole)
    return table


def _num(value: float | None) -> str:
    return "null" if value is None else f"{value:.4g}"


def _ratio(value: float | None) -> str:
    """x1.43; far from 1 (absurd specs) in exponent form, never 300 digits nor a false x0.00."""
    if value is None:
        return "-"
    if value != 0 and not 0.01 <= abs(value) < 1e6:
        return f"x{value:.3g}"
    return f"x{value:.2f}"


def _bare(node: str) -> str:
    return node.partition(":")[2]


def chain(start: str, edges: list[dict[str, str]]) -> str:
    """A path as text from `start`: `a -depends_on-> b <-specifies- c`."""
    out, cur = _bare(start), start
    for e in edges:
        if e["source"] == cur:
            out += f" -{e['relation']}-> {_bare(e['target'])}"
            cur = e["target"]
        else:
            out += f" <-{e['relation']}- {_bare(e['source'])}"
            cur = e["source"]
    return out


@app.command(epilog=example("flopkb graph affects hbm_bandwidth"))
def affects(
    ctx: typer.Context,
    ident: Annotated[
        str, typer.Argument(metavar="ID", help="a quantity, accelerator or source id")
    ],
    direct: Annotated[
        bool, typer.Option("--direct", help="accelerator: only classes listing it, not its specs")
    ] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Every claim and class that depends on ID, through computed quantities too, with the path."""
    result = _run(lambda: queries.affects(_graph(ctx), ident, via_specs=not direct))
    if fmt is OutputFormat.json:
        return emit_json(result)
    tree = Tree(
        plain(
            (result["id"], "bold"),
            f" ({result['kind']}): {count(len(result['claims']), 'claim')} in "
            f"{count(len(result['classes']), 'class', 'classes')}",
        )
    )
    if result["quantities"]:
        tree.add(plain("through computed: " + ", ".join(result["quantities"])))
    by_class: dict[str, Tree] = {}
    for claim in result["claims"]:
        cls = claim.split("/", 1)[0]
        if cls not in by_class:
            by_class[cls] = tree.add(plain((cls, "bold")))
        line = plain(chain(f"claim:{claim}", result["paths"][claim]))
        line.overflow = "fold"
        by_class[cls].add(line)
    for cls in result["classes"]:
        if cls not in by_class:
            tree.add(plain((cls, "bold"), " (no claims)"))
    console.print(tree, soft_wrap=False)
    print_kb(ctx)


@app.command(epilog=example("flopkb graph why mamba2-ssd --on h200-sxm"))
def why(
    ctx: typer.Context,
    cls: Annotated[str, typer.Argument(metavar="CLASS", help="a class (operator or model) id")],
    on: Annotated[str | None, typer.Option("--on", help="an accelerator id")] = None,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """What moves CLASS's cost: its quantities with their values, and its claims with verdicts."""
    result = _run(lambda: queries.why(_graph(ctx), cls, on))
    if fmt is OutputFormat.json:
        return emit_json(result)
    console.print(plain((result["class"], "bold"), ": ", result["title"]), highlight=False)
    if result["on"] and not result["affected"]:
        console.print(
            plain(f"note: {result['on']} is not in {result['class']}'s affected_by_hardware")
        )
    table = _table(
        "quantities that move its cost",
        ["quantity", "unit", "formula", *result["accelerators"]],
        whole=(1, *range(3, 3 + len(result["accelerators"]))),
    )
    for q in result["quantities"]:
        cells = [
            _num(v["value"]) if v["value"] is not None else v["status"]
            for v in q["values"].values()
        ]
        table.add_row(q["id"], q["unit"] or "", q["formula"] or "", *cells)
    console.print(table)
    claims = _table(
        "claims",
        ["claim", "quantity", "magnitude", "basis", "verdicts", "not applicable on"],
        whole=(2, 3),
    )
    for c in result["claims"]:
        verdicts = ", ".join(f"{a}: {v}" for a, v in c["verdicts"].items()) or "-"
        claims.add_row(
            c["claim"],
            c["quantity"],
            c["magnitude"],
            c["basis"],
            verdicts,
            ", ".join(c["not_applicable_on"]) or "-",
        )
    console.print(claims)
    print_kb(ctx)


@app.command(epilog=example("flopkb graph diff h100-sxm h200-sxm"))
def diff(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(metavar="ACC_A", help="the part you have")],
    b: Annotated[str, typer.Argument(metavar="ACC_B", help="the part you compare with")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Quantities that differ from ACC_A to ACC_B (ratio B/A) and the claims that depend on them."""
    result = _run(lambda: queries.diff(_graph(ctx), a, b))
    if fmt is OutputFormat.json:
        return emit_json(result)
    table = _table(
        f"{result['a']} -> {result['b']}: quantities that differ",
        ["quantity", "unit", result["a"], result["b"], "B/A", "claims"],
        whole=(1, 2, 3, 4, 5),
    )
    tree = Tree("claims depending on a quantity that differs")
    for q in result["quantities"]:
        if not q["differs"]:
            continue
        name = q["quantity"] + (" (computed)" if q["kind"] == "computed" else "")
        n_claims = str(len(q["claims"]))
        table.add_row(name, q["unit"], _num(q["a"]), _num(q["b"]), _ratio(q["ratio"]), n_claims)
        if q["claims"]:
            branch = tree.add(plain((q["quantity"], "bold"), f" {_ratio(q['ratio'])}"))
            for claim in q["claims"]:
                line = plain(claim)
                line.overflow = "fold"
                branch.add(line)
    console.print(table)
    console.print(tree, soft_wrap=False)
    same = [q["quantity"] for q in result["quantities"] if not q["differs"]]
    console.print(
        plain(
            f"{count(len(result['claims']), 'claim')} in "
            f"{count(len(result['classes']), 'class', 'classes')} depend on a quantity "
            f"that differs; same on both: {', '.join(same) or '-'}"
        ),
        highlight=False,
    )
    print_kb(ctx)


@app.command("what-if", epilog=example("flopkb graph what-if h100-sxm --set hbm_bandwidth=4.8"))
def what_if(
    ctx: typer.Context,
    acc: Annotated[str, typer.Argument(metavar="ACC", help="an accelerator id")],
    settings: Annotated[
        list[str],
        typer.Option("--set", help="QUANTITY=VALUE, a datasheet value to override (repeatable)"),
    ],
    context: Annotated[
        int, typer.Option("--context", min=1, max=2**40, help="context L of the model bounds")
    ] = 4096,
    batch: Annotated[int, typer.Option("--batch", min=1, max=2**30, help="batch B")] = 1,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Override datasheet values on ACC, recompute computed quantities, and list what moves
    (claims, and the tokens/s roofline bounds of every architecture record)."""
    from flopkb.architecture.show import RooflineOutOfRange

    try:
        result = _run(
            lambda: queries.what_if(
                _graph(ctx), acc, queries.parse_settings(settings), context=context, batch=batch
            )
        )
    except RooflineOutOfRange as exc:
        # a finite value whose arithmetic is not (1e308 GB is 1e317 bytes): an answer cannot be
        # given, like a finding, not a usage error
        fail(f"{', '.join(settings)}: {exc}", code=1, kind="input")
    if fmt is OutputFormat.json:
        return emit_json(result)
    table = _table(
        f"what if on {result['accelerator']}",
        ["quantity", "before", "after", "ratio"],
        whole=(1, 2, 3),
    )
    for q in result["quantities"]:
        name = q["id"] + (" (computed)" if q["computed"] else "")
        change = _ratio(q["ratio"])
        if q["ratio"] is None and q["before_status"] != q["after_status"]:
            change = f"{q['before_status']} -> {q['after_status']}"
        table.add_row(name, _num(q["before"]), _num(q["after"]), change)
    console.print(table)
    claims = _table(
        "claims that move", ["claim", "via", "ratio", f"class lists {result['accelerator']}"]
    )
    for c in result["claims"]:
        claims.add_row(
            c["claim"], ", ".join(c["via"]), _ratio(c["ratio"]), "yes" if c["affected"] else "no"
        )
    console.print(claims)
    if result["architectures"]:
        bounds = _table(
            f"model roofline bounds that move (L = {context}, B = {batch})",
            ["architecture", "prefill tok/s", "decode tok/s", "max batch"],
        )
        for m in result["architectures"]:
            cells = [
                f"{_num(m['before'][f])} -> {_num(m['after'][f])} ({_ratio(m['ratio'][f])})"
                for f in ("prefill_tokens_per_s", "decode_tokens_per_s", "max_batch")
            ]
            bounds.add_row(m["architecture"], *cells)
        console.print(bounds)
    print_kb(ctx)


@app.command(epilog=example("flopkb graph path mamba2-ssd hbm_bandwidth"))
def path(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(metavar="A", help="any id")],
    b: Annotated[str, typer.Argument(metavar="B", help="any id")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """The shortest path from A to B, ignoring edge direction, shown with each edge's relation."""
    result = _run(lambda: queries.path(_graph(ctx), a, b))
    if fmt is OutputFormat.json:
        return emit_json(result)
    if result["edges"] is None:
        console.print(plain(f"no path between {result['from']} and {result['to']}"))
        print_kb(ctx)
        return
    console.print(plain(chain(result["from"], result["edges"])))
    console.print(plain(f"({count(result['length'], 'edge')})"))
    print_kb(ctx)


@app.command(epilog=example("flopkb graph status --format json"))
def status(ctx: typer.Context, fmt: FormatOption = OutputFormat.text) -> None:
    """Claims that are unverified, stale, contradicted by evidence, disagreeing (their runs on a
    part gave different verdicts), implementation-sensitive (the verdict changed with the
    implementation that ran), or not applicable on a part."""
    result = _run(lambda: queries.status(_graph(ctx)))
    if fmt is OutputFormat.json:
        return emit_json(result)

    def section(
        title: str,
        rows: list[dict[str, Any]],
        cols: list[str],
        cell: Callable[[dict[str, Any]], list[str]],
        whole: tuple[int, ...] = (),
    ) -> None:
        if not rows:
            console.print(plain((title, "bold"), ": none"))
            return
        table = _table(f"{title}: {len(rows)}", cols, whole)
        for row in rows:
            table.add_row(*cell(row))
        console.print(table)

    section(
        "unverified",
        result["unverified"],
        ["claim", "quantity", "magnitude"],
        lambda r: [r["claim"], r["quantity"], r["magnitude"]],
        (2,),
    )
    section(
        "stale",
        result["stale"],
        ["claim", "evidence"],
        lambda r: [r["claim"], ", ".join(e["evidence"] for e in r["evidence"])],
    )
    section(
        "contradicted",
        result["contradicted"],
        ["claim", "refuted on", "evidence"],
        lambda r: [r["claim"], ", ".join(r["accelerators"]), ", ".join(r["evidence"])],
    )
    section(
        "disagreeing runs",
        result["disagreeing"],
        ["claim", "on", "runs", "pooled over the runs' rounds"],
        lambda r: [r["claim"], ", ".join(r["accelerators"]),
                   "; ".join(f"{e['evidence']}: {e['verdict']}"
                             for a in r["accelerators"] for e in r["runs"][a]),
                   "; ".join(r["pooled"].get(a) or "-" for a in r["accelerators"])],
    )
    section(
        "implementation-sensitive",
        result["implementation_sensitive"],
        ["claim", "on", "evidence"],
        lambda r: [r["claim"], ", ".join(r["accelerators"]), ", ".join(r["evidence"])],
    )
    section(
        "not applicable",
        result["not_applicable"],
        ["claim", "on"],
        lambda r: [r["claim"], ", ".join(r["accelerators"])],
    )
    section(
        "not verified by design",
        result["not_verifiable"],
        ["claim", "why"],
        lambda r: [r["claim"], r["reason"]],
    )
    print_kb(ctx)


@app.command(epilog=example("flopkb graph export --format graphml --out kb.graphml"))
def export(
    ctx: typer.Context,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="the graph's file format")
    ] = ExportFormat.json,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write here (atomically), not stdout")
    ] = None,
    force: ForceOption = False,
    follow_symlinks: FollowSymlinksOption = False,
) -> None:
    """The whole graph as node-link JSON, GraphML or DOT, to stdout or --out FILE."""
    policy = write_policy(ctx, force, follow_symlinks)
    if out is not None:
        with safe_writes(policy):
            check_target(out, policy)  # refuse before the graph is built, not after
    kg = _graph(ctx)
    text = export_graph(kg.g, fmt.value)
    if out is None:
        sys.stdout.write(text)
        return
    with safe_writes(policy):
        atomic_write_text(out, text)
    err_console.print(
        plain(f"wrote {out} ({count(kg.g.number_of_nodes(), 'node')}, "
              f"{count(kg.g.number_of_edges(), 'edge')})"),
        highlight=False,
    )


@app.command(epilog=example("flopkb graph render kb.svg"))
def render(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(metavar="OUT", help="OUT.svg or OUT.png")],
    focus: Annotated[
        str | None, typer.Option("--focus", help="draw only this id's neighbourhood")
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine", help="graphviz or matplotlib (default: graphviz if `dot` is on PATH)"
        ),
    ] = None,
    force: ForceOption = False,
    follow_symlinks: FollowSymlinksOption = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Draw the graph, laid out in columns by kind, claims coloured by verdict and basis."""
    policy = write_policy(ctx, force, follow_symlinks)
    with safe_writes(policy):
        check_target(out, policy)  # refuse before the graph is built and laid out, not after
    kg = _graph(ctx)
    with safe_writes(policy):
        try:
            result = _run(lambda: render_graph(kg, out, focus, engine))
        except PictureTooLarge as exc:
            # the KB's size, not a usage error: exit 1 (content never gives exit 2)
            fail(f"refused: {exc}", code=1, kind="too-large")
    if fmt is OutputFormat.json:
        return emit_json(result)
    console.print(
        plain(
            f"wrote {result['out']} ({result['engine']}, {count(result['nodes'], 'node')}, "
            f"{count(result['edges'], 'edge')})"
        ),
        highlight=False,
    )
    print_kb(ctx)
