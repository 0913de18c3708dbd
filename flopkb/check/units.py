"""Units of accelerator specs: each spec is stored in its quantity's canonical unit.

A spec in a different but convertible unit (3350 GB/s for a quantity in TB/s) is an error whose hint
gives the converted value to store; a unit of another dimension is an error without a conversion.
A null value (an absent hardware path) needs a note saying why. Every accelerator specifies the
required datasheet quantities (REQUIRED_SPECS) that the KB defines (a value, or null + note).

Conversion uses the one unit table of `flopkb.grammar.units` (a table, not a units library: the
canonical units are vendor units such as TOPS, TFLOP/s, GB, KiB; that module says why).
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.grammar.units import UNITS
from flopkb.model import AcceleratorRecord

# The datasheet quantities every accelerator gives (docs/kb.md, "What the KB holds").
REQUIRED_SPECS = (
    "bf16_tensor_flops", "fp16_tensor_flops", "tf32_tensor_flops", "int8_tensor_ops",
    "int4_tensor_ops", "fp32_simt_flops", "hbm_bandwidth", "memory_capacity", "l2_cache_size",
    "smem_per_sm", "sm_count",
)  # fmt: skip

def convert(value: float, unit: str, target: str) -> float | None:
    """`value` in `unit` expressed in `target`, or None when the two are not of one dimension.

    Stricter than `flopkb.grammar.units.convert`: a spec counts FLOPs or integer OPs, and an INT8
    peak typed in TFLOP/s is a wrong-quantity mistake, not a unit to convert.
    """
    a, b = UNITS.get(unit), UNITS.get(target)
    if a is None or b is None or (a.dimension, a.counts) != (b.dimension, b.counts):
        return None
    return b.from_base(a.to_base(value))


@check
def spec_units(ctx: CheckContext) -> Iterator[Finding]:
    """FKB410-413: units match the quantity, nulls carry notes, required specs are present."""
    for acc_id, acc in sorted(ctx.kb.accelerators.items()):
        yield from ctx.isolated(acc_id, _accelerator_units(ctx, acc_id, acc))


def _accelerator_units(
    ctx: CheckContext, acc_id: str, acc: AcceleratorRecord
) -> Iterator[Finding]:
    """FKB410-413 for one accelerator."""
    quantities = ctx.kb.quantities
    for qid, spec in sorted(acc.specs.items()):
        path = ("specs", qid)
        if spec.value is None and not (spec.note and spec.note.strip()):
            yield ctx.finding(
                "FKB412", acc_id, path,
                f"{qid} is null (not supported) but has no note saying why",
                "add note: e.g. 'Hopper has no INT4 tensor-core path'",
            )  # fmt: skip
        quantity = quantities.get(qid)
        if quantity is None or spec.unit == quantity.unit:
            continue
        converted = (
            None if spec.value is None else convert(spec.value, spec.unit, quantity.unit)
        )
        if converted is not None or (
            spec.value is None and convert(1.0, spec.unit, quantity.unit)
        ):
            hint = f"store it in {quantity.unit}"
            if converted is not None:
                hint = f"store value: {converted:.6g}, unit: {quantity.unit}"
            yield ctx.finding(
                "FKB410", acc_id, (*path, "unit"),
                f"{qid} is given in {spec.unit!r}; its quantity is in {quantity.unit!r}",
                hint,
            )  # fmt: skip
        else:
            yield ctx.finding(
                "FKB411", acc_id, (*path, "unit"),
                f"{qid} is given in {spec.unit!r}, not a unit of {qid} ({quantity.unit!r})",
                f"expected {quantity.unit!r}",
            )  # fmt: skip
    for qid in REQUIRED_SPECS:
        if qid in quantities and qid not in acc.specs:
            yield ctx.finding(
                "FKB413", acc_id, ("specs",),
                f"{acc_id} does not specify {qid}",
                f"add {qid} with value, unit and source (or value: null and a note)",
            )  # fmt: skip
