"""`flopkb model show ID`: an architecture's sourced config, computed parameters and rooflines."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import typer
from rich.markup import escape

from flopkb.architecture.cost import ArchitectureError
from flopkb.architecture.show import DEFAULT_CONTEXT, model_show
from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    fail,
    kb_root,
    report_error,
)
from flopkb.cli.help import example
from flopkb.cli.tables import IdTable
from flopkb.findings import Finding, Severity, sorted_findings
from flopkb.hardware.model import UnknownRecord
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.plural import count

app = typer.Typer(
    help="architecture records: sourced config, computed model parameters, roofline bounds",
    no_args_is_help=True,
    rich_markup_mode=None,
)


class Dtype(str, Enum):
    bf16 = "bf16"
    fp16 = "fp16"
    fp32 = "fp32"


def _si(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}".strip()


def _bytes(value: float) -> str:
    for scale, name in ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:.4g} {name}"
    return f"{value:.4g} B"


def _source(source: dict[str, Any] | None) -> str:
    if not source:
        return "-"
    return f"{source['id']}, {source['locator']}" if source.get("locator") else source["id"]


@app.command(
    "show", epilog=example("flopkb model show jamba-1-5-mini --context 262144 --on h200-sxm")
)
def show(
    ctx: typer.Context,
    architecture: Annotated[str, typer.Argument(help="architecture record id, e.g. nemotron-h-8b")],
    context: Annotated[
        int, typer.Option("--context", min=1, max=2**40, help="prompt / context length L")
    ] = DEFAULT_CONTEXT,
    batch: Annotated[int, typer.Option("--batch", min=1, max=2**30, help="batch B")] = 1,
    on: Annotated[
        list[str] | None, typer.Option("--on", help="accelerator id (repeatable); default: all")
    ] = None,
    dtype: Annotated[Dtype, typer.Option("--dtype", help="weights and caches")] = Dtype.bf16,
    state_dtype: Annotated[
        Dtype | None, typer.Option("--state-dtype", help="recurrent state (default: --dtype)")
    ] = None,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Sourced config, computed parameters at (L, B) and roofline bounds per accelerator."""
    kb, findings = load_kb(kb_root(ctx))
    _refuse_invalid(kb, findings, architecture)
    try:
        for acc in on or []:
            if acc not in kb.accelerators:
                raise UnknownRecord("accelerator", acc, kb.accelerators)
        data = model_show(
            kb, architecture, context=context, batch=batch, dtype=dtype.value,
            state_dtype=state_dtype.value if state_dtype else None, on=on or None,
        )  # fmt: skip
    except UnknownRecord as exc:
        fail(str(exc).strip('"'))
    except ArchitectureError as exc:
        # the record lacks a size (record content, FKB903): exit 1 like a finding, never 2
        fail(f"{exc} (see `flopkb validate`)", code=1, kind="record")
    if fmt is OutputFormat.json:
        emit_json(data)
        # the document says it (`out_of_range` of each roofline); a second one would not parse
        if any(r["out_of_range"] for r in data["rooflines"].values()):
            raise typer.Exit(1)
        return
    c = data["computed"]
    # a title is record content: never read as rich markup
    config = IdTable(title=f"{data['id']}: {escape(data['title'])} (config, as sourced)")
    for column in ("key", "value", "source", "note"):
        config.add_column(column, overflow="fold")
    layers = data["layers"]
    if layers["pattern"]:
        pattern = layers["pattern"] + (f" x {layers['repeat']}" if layers["repeat"] > 1 else "")
        legend = ", ".join(f"{k} = {v}" for k, v in layers["legend"].items())
        config.add_row(
            "layers", f"{pattern} ({legend})", _source(layers["source"]), layers["note"] or ""
        )
    config.add_row("layer counts", ", ".join(f"{k}: {n}" for k, n in c["counts"].items()), "-", "")
    for key, entry in data["config"].items():
        config.add_row(key, str(entry["value"]), _source(entry["source"]), entry["note"] or "")
    if data["notes"]:
        config.add_row("notes", data["notes"], "-", "")
    console.print(config)
    computed = IdTable(title=f"computed at L = {c['context']}, B = {c['batch']}, {c['dtype']} "
                             f"(state {c['state_dtype']})")  # fmt: skip
    for column in ("quantity", "value"):
        computed.add_column(column, overflow="fold")
    reported = data["parameters_reported"]
    rows = [
        ("parameters", _si(c["parameters"]) + (f" (reported {_si(reported)})" if reported else "")),
        ("active parameters per token", _si(c["active_parameters"])),
        ("layers", str(c["layers"])),
        ("attention share of layers", f"{c['attention_share']:.3g}%"),
        ("FLOPs per prompt token at L", _si(c["prefill_flops_per_token"], "FLOP")),
        ("FLOPs per decode step at L (per sequence)", _si(c["decode_flops_per_step"], "FLOP")),
        ("KV cache at L, B", _bytes(c["kv_cache_bytes"])),
        ("recurrent state at B", _bytes(c["state_bytes"])),
        ("weights", _bytes(c["weight_bytes"])),
        (
            "weights read per decode step (experts the batch reaches)",
            _bytes(c["decode_weight_bytes"]),
        ),
        ("bytes read per decode step (weights + KV + state)", _bytes(c["decode_bytes_per_step"])),
    ]
    for name, value in rows:
        computed.add_row(name, value)
    console.print(computed)
    bounds = IdTable(title="roofline bounds (upper bounds from datasheet values, not measurements)")
    for column in ("accelerator", "prefill tok/s", "decode tok/s (batch)", "per sequence",
                   "max batch at L", "bound", "note"):  # fmt: skip
        bounds.add_column(column, overflow="fold")
    for acc, r in data["rooflines"].items():
        bound = ", ".join(f"{k}: {v}" for k, v in r["bound"].items())
        max_batch = "-" if r["max_batch"] is None else str(r["max_batch"])
        bounds.add_row(
            acc, _si(r["prefill_tokens_per_s"]), _si(r["decode_tokens_per_s"]),
            _si(r["decode_tokens_per_s_per_sequence"]), max_batch, bound, r["note"] or "",
        )  # fmt: skip
    console.print(bounds)
    for line in c["assumptions"]:
        console.print(f"assumed: {line}", markup=False, highlight=False)
    _out_of_range(data)


def _refuse_invalid(kb: KnowledgeBase, findings: list[Finding], arch_id: str) -> None:
    """A record of this id that fails to load, or an architecture loaded with schema errors
    (salvaged: what is missing would be computed wrong), is record content, not a usage error:
    name the file and its first error, exit 1. (It is not "no architecture record".)"""
    file = kb.unloaded.get(arch_id)
    state = "does not load"
    if file is None and arch_id in kb.architectures:
        file, state = kb.partial.get(arch_id), "has schema errors"
    if file is None:
        return
    errors = [f for f in sorted_findings(findings)
              if f.file == file and f.severity is Severity.error]  # fmt: skip
    first = f": {errors[0].file}:{errors[0].line}:{errors[0].column}: {errors[0].rule} " \
            f"{errors[0].message}" if errors else ""
    more = f" (and {count(len(errors) - 1, 'more error')})" if len(errors) > 1 else ""
    fail(
        f"the record {arch_id!r} exists ({file}) but {state}{first}{more}; see "
        "`flopkb validate`", code=1, kind="record",
    )  # fmt: skip


def _out_of_range(data: dict[str, Any]) -> None:
    """A part whose datasheet values leave the float range (validate's FKB423) has no bounds:
    the rest is shown, then one line names it and the command exits 1, like a finding."""
    bad = [acc for acc, r in data["rooflines"].items() if r["out_of_range"]]
    if bad:
        reason = data["rooflines"][bad[0]]["out_of_range"]
        more = f" (and {len(bad) - 1} more accelerators)" if len(bad) > 1 else ""
        report_error(f"{bad[0]}: {reason}{more}; see `flopkb validate`")
        raise typer.Exit(1)
