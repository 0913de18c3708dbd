"""Datasheet specs against the device itself: what `flopkb verify` read from the GPU.

Every evidence record carries the `machine` verify ran on, with properties the CUDA runtime
reports (`cudaDeviceProp`): the SM count, the L2 cache size, the device memory. A spec of the
accelerator that evidence matched must agree with them, within the spec's own rounding:

- `sm_count` with `machine.sm_count`: the same whole number;
- `l2_cache_size` with `machine.l2_cache_bytes`: the spec's last printed digit, read with its
  prefix decimal (MB = 10^6 B) or binary (NVIDIA's cache MB are 1024 KB, as the bundled quantity
  `l2_cache_size` says); either reading agreeing is agreement;
- `memory_capacity` with `machine.memory_bytes`: the device reports the memory left after the
  driver's own reservation, so it may lie up to `MEMORY_RESERVE` below the capacity (the KB's H200
  evidence: 150,109,880,320 B of 141 GB read as GiB, 0.99), never above it.

The newest calibration evidence of each accelerator that records a property is the one compared
(else the newest evidence of any experiment). A spec may
name such an evidence record as its source (a value no public document states, read from the
device): the evidence must then be of this accelerator and record that property (FKB431).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.grammar.units import UNITS
from flopkb.model import AcceleratorRecord, EvidenceRecord

# how far below the stated capacity the memory a device reports may lie (driver reservation)
MEMORY_RESERVE = 0.05


@dataclass(frozen=True)
class DeviceProperty:
    """How one quantity is read from the `machine` of an evidence record."""

    quantity: str
    machine_key: str
    unit: str  # of the machine's value: "count" or "B"


PROPERTIES = (
    DeviceProperty("sm_count", "sm_count", "count"),
    DeviceProperty("l2_cache_size", "l2_cache_bytes", "B"),
    DeviceProperty("memory_capacity", "memory_bytes", "B"),
)
_BY_QUANTITY = {p.quantity: p for p in PROPERTIES}
_BINARY = {"KB": 2.0**10, "MB": 2.0**20, "GB": 2.0**30, "TB": 2.0**40}


def half_unit(value: float) -> float:
    """Half a unit of the last digit `value` is printed with: 50 -> 0.5, 4.8 -> 0.05."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        return abs(value) * 5e-7  # a figure in exponent form: treat it as 6 significant digits
    decimals = text.split(".", 1)[1].rstrip("0") if "." in text else ""
    return 0.5 * 10.0 ** -len(decimals)


def _byte_factors(unit: str) -> list[float]:
    """Bytes per `unit`: the decimal reading, and the binary one for KB/MB/GB/TB."""
    factors = []
    if unit == "B":
        factors.append(1.0)
    if unit in UNITS and UNITS[unit].dimension == "bytes":
        factors.append(UNITS[unit].factor)
    if unit in _BINARY:
        factors.append(_BINARY[unit])
    return factors


def agrees(prop: DeviceProperty, spec_value: float, spec_unit: str, device: float) -> bool | None:
    """Does the device's `device` agree with the spec? None: the units cannot be compared."""
    slack = half_unit(spec_value)
    if prop.unit == "count":
        return abs(device - spec_value) <= slack
    factors = _byte_factors(spec_unit)
    if not factors:
        return None
    for f in factors:
        high = (spec_value + slack) * f
        low = (spec_value - slack) * f
        if prop.quantity == "memory_capacity":
            low *= 1 - MEMORY_RESERVE
        if low <= device <= high:
            return True
    return False


def _shown(prop: DeviceProperty, device: float) -> str:
    if prop.unit == "count":
        return f"{device:g}"
    return f"{device:,.0f} bytes ({device / 2**20:,.4g} MiB, {device / 1e6:,.4g} MB)"


def _device_value(ev: EvidenceRecord, prop: DeviceProperty) -> float | None:
    machine: dict[str, Any] = ev.machine or {}
    value = machine.get(prop.machine_key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def newest_device_values(kb: Any, acc_id: str) -> dict[str, tuple[float, EvidenceRecord]]:
    """quantity -> (device value, the evidence of `acc_id` recording it: calibration first)."""
    found: dict[str, tuple[float, EvidenceRecord]] = {}
    mine = [ev for ev in kb.evidence.values() if ev.accelerator == acc_id]
    # calibration evidence first (it exists to describe the machine), then the newest
    ranked = sorted(
        mine, key=lambda e: (e.experiment == "calibration", e.timestamp, e.id), reverse=True
    )
    for ev in ranked:
        for prop in PROPERTIES:
            if prop.quantity not in found:
                value = _device_value(ev, prop)
                if value is not None:
                    found[prop.quantity] = (value, ev)
    return found


@check
def specs_match_the_device(ctx: CheckContext) -> Iterator[Finding]:
    """FKB430/FKB431: specs against the device properties verify recorded."""
    for acc_id, acc in sorted(ctx.kb.accelerators.items()):
        yield from ctx.isolated(acc_id, _accelerator(ctx, acc_id, acc))


def _accelerator(ctx: CheckContext, acc_id: str, acc: AcceleratorRecord) -> Iterator[Finding]:
    evidence = ctx.kb.evidence
    for qid, spec in sorted(acc.specs.items()):
        cited = evidence.get(spec.source.id) if spec.source is not None else None
        prop = _BY_QUANTITY.get(qid)
        if cited is not None and (
            cited.accelerator != acc_id or prop is None or _device_value(cited, prop) is None
        ):
            what = f"machine.{prop.machine_key}" if prop else "a device property for it"
            yield ctx.finding(
                "FKB431", acc_id, ("specs", qid, "source", "id"),
                f"{qid} cites evidence {cited.id}, which does not record {what} of {acc_id}",
                "cite a source record, or evidence verify wrote on this accelerator",
            )  # fmt: skip
    device = newest_device_values(ctx.kb, acc_id)
    for qid, (value, ev) in sorted(device.items()):
        spec = acc.specs.get(qid)
        if spec is None or spec.value is None:
            continue
        prop = _BY_QUANTITY[qid]
        verdict = agrees(prop, float(spec.value), spec.unit, value)
        if verdict is False:
            yield ctx.finding(
                "FKB430", acc_id, ("specs", qid, "value"),
                f"{qid} is {spec.value:g} {spec.unit}, but the device reported "
                f"{_shown(prop, value)} (evidence {ev.id}, machine.{prop.machine_key})",
                "check the datasheet figure; where no document states it, store the device's "
                f"value with source {{id: {ev.id}}} and say so in the spec's note",
            )  # fmt: skip
