"""What `flopkb model show` and the model-level claim checks read: computed model parameters of
an architecture record, its sourced config, its roofline bounds per KB accelerator, and the
architecture-level values a claim row's `derived_from` names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flopkb.architecture.cost import (
    FLOPS_QUANTITY,
    ROOFLINE_QUANTITIES,
    ArchitectureError,
    Costs,
    compute,
    roofline,
)
from flopkb.hardware.model import HardwareModel, UnknownRecord
from flopkb.kb import KnowledgeBase
from flopkb.model import ArchitectureRecord, ArchitectureValue, DerivedFrom

# A comparison of two architectures takes exactly two (the model, then its baseline).
COMPARISONS = frozenset({ArchitectureValue.kv_cache_ratio, ArchitectureValue.kv_cache_reduction})
UNITS = {
    ArchitectureValue.attention_share: "%",
    ArchitectureValue.non_attention_share: "%",
    ArchitectureValue.linear_to_attention_ratio: ":",
    ArchitectureValue.kv_cache_ratio: "x",
    ArchitectureValue.kv_cache_reduction: "%",
}
DEFAULT_CONTEXT = 4096


def architecture(kb: KnowledgeBase, arch_id: str) -> ArchitectureRecord:
    arch = kb.architectures.get(arch_id)
    if arch is None:
        raise UnknownRecord("architecture", arch_id, kb.architectures)
    return arch


def hardware_values(model: HardwareModel, acc_id: str, dtype: str) -> dict[str, float | None]:
    """The datasheet values the rooflines need on one part (None where absent or null)."""
    acc = model.accelerator(acc_id)
    return {q: model.value(acc, q).value for q in (FLOPS_QUANTITY[dtype], *ROOFLINE_QUANTITIES)}


def _config(arch: ArchitectureRecord) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in type(arch.config).model_fields:
        entry = getattr(arch.config, key)
        if entry is None:
            continue
        value = entry.value.value if hasattr(entry.value, "value") else entry.value
        out[key] = {
            "value": value,
            "source": {"id": entry.source.id, "locator": entry.source.locator}
            if entry.source
            else None,
            "note": entry.note,
        }
    return out


def model_show(
    kb: KnowledgeBase,
    arch_id: str,
    context: int = DEFAULT_CONTEXT,
    batch: int = 1,
    dtype: str = "bf16",
    state_dtype: str | None = None,
    on: list[str] | None = None,
    hw: Mapping[str, Mapping[str, float | None]] | None = None,
) -> dict[str, Any]:
    """`{"id", "title", "family", "layers", "config", "computed", "rooflines": {acc: {...}}}`.

    `on` narrows the rooflines to these accelerators (default: every accelerator of the KB);
    `hw` replaces their datasheet values (what-if). Raises UnknownRecord, ArchitectureError.
    """
    arch = architecture(kb, arch_id)
    costs = compute(arch, context=context, batch=batch, dtype=dtype, state_dtype=state_dtype)
    model = HardwareModel(kb)
    parts = on if on is not None else sorted(kb.accelerators)
    rooflines = {}
    for acc_id in parts:
        values = hw[acc_id] if hw and acc_id in hw else hardware_values(model, acc_id, dtype)
        rooflines[acc_id] = roofline(costs, acc_id, values).as_dict()
    layers = arch.layers
    return {
        "id": arch.id,
        "title": arch.title,
        "family": arch.family,
        "parameters_reported": arch.parameters_reported,
        "layers": {
            "pattern": layers.pattern,
            "repeat": layers.repeat,
            "layer_width": layers.layer_width,
            "legend": {c: t.value for c, t in layers.legend.items()},
            "counts": costs.counts,
            "source": {"id": layers.source.id, "locator": layers.source.locator}
            if layers.source
            else None,
            "note": layers.note,
        },
        "config": _config(arch),
        "computed": costs.as_dict(),
        "rooflines": rooflines,
        "notes": arch.notes,
    }


def shown(value: float, unit: str, digits: int = 4) -> str:
    """A computed value as a magnitude writes it: 8x, 74.07%, 2.857:1."""
    return f"{value:.{digits}g}" + (":1" if unit == ":" else unit)


@dataclass(frozen=True)
class DerivedValue:
    """One computed value a row names: per architecture, or of a comparison."""

    value: float | None
    unit: str
    label: str  # what was computed, in words ("kv_cache_ratio of mixtral-8x7b / jamba-1-5-mini")
    error: str | None = None


def derived_values(kb: KnowledgeBase, spec: DerivedFrom) -> list[DerivedValue]:
    """The values `spec` names: one per architecture (shares, ratios), one for a comparison."""
    unit = UNITS[spec.value]
    context = spec.at.get("context", DEFAULT_CONTEXT)
    batch = spec.at.get("batch", 1)
    if spec.value in COMPARISONS:
        if len(spec.architectures) != 2:
            return [DerivedValue(None, unit, spec.value.value, "a comparison takes exactly two "
                                 "architectures: the model, then its baseline")]  # fmt: skip
        try:
            a, b = (
                compute(architecture(kb, x), context=context, batch=batch)
                for x in spec.architectures
            )
        except (UnknownRecord, ArchitectureError) as exc:
            return [DerivedValue(None, unit, spec.value.value, str(exc).strip('"'))]
        label = f"{spec.value.value} of {a.architecture} against {b.architecture} at L={context}"
        if a.kv_cache_bytes <= 0:
            return [DerivedValue(None, unit, label, f"{a.architecture} keeps no KV cache")]
        if spec.value is ArchitectureValue.kv_cache_ratio:
            return [DerivedValue(b.kv_cache_bytes / a.kv_cache_bytes, unit, label)]
        return [DerivedValue(100 * (1 - a.kv_cache_bytes / b.kv_cache_bytes), unit, label)]
    out = []
    for arch_id in spec.architectures:
        label = f"{spec.value.value} of {arch_id}"
        try:
            costs: Costs = compute(architecture(kb, arch_id), context=context, batch=batch)
        except (UnknownRecord, ArchitectureError) as exc:
            out.append(DerivedValue(None, unit, label, str(exc).strip('"')))
            continue
        if spec.value is ArchitectureValue.attention_share:
            out.append(DerivedValue(costs.attention_share, unit, label))
        elif spec.value is ArchitectureValue.non_attention_share:
            out.append(DerivedValue(100 - costs.attention_share, unit, label))
        elif costs.linear_to_attention is None:
            out.append(DerivedValue(None, unit, label, f"{arch_id} has no attention layer"))
        else:
            out.append(DerivedValue(costs.linear_to_attention, unit, label))
    return out


class RooflineOutOfRange(ValueError):
    """A what-if's values make a roofline bound leave the finite float range (the message)."""


def roofline_changes(
    kb: KnowledgeBase,
    accelerator: str,
    before: Mapping[str, float | None],
    after: Mapping[str, float | None],
    context: int = DEFAULT_CONTEXT,
    batch: int = 1,
) -> list[dict[str, Any]]:
    """Each architecture's roofline bounds on `accelerator` with the datasheet values `before`
    and `after` (a what-if), where a bound moves: prefill with tensor FLOP/s, decode with HBM
    bandwidth (and FLOP/s at large batch), the largest batch with memory capacity. Raises
    RooflineOutOfRange where `after` is out of floating point's range and `before` was not."""
    fields = ("prefill_tokens_per_s", "decode_tokens_per_s", "max_batch")
    out = []
    for arch_id, arch in sorted(kb.architectures.items()):
        try:
            costs = compute(arch, context=context, batch=batch)
        except ArchitectureError:
            continue  # FKB903 reports the record
        x = roofline(costs, accelerator, before).as_dict()
        y = roofline(costs, accelerator, after).as_dict()
        if y["out_of_range"] and not x["out_of_range"]:
            # the values asked about leave the float range: no bound to compare
            raise RooflineOutOfRange(y["out_of_range"])
        if all(x[f] == y[f] for f in fields):
            continue
        out.append(
            {
                "architecture": arch_id,
                "context": context,
                "batch": batch,
                "before": {f: x[f] for f in fields},
                "after": {f: y[f] for f in fields},
                "ratio": {f: (y[f] / x[f]) if x[f] and y[f] is not None else None for f in fields},
            }
        )
    return out
