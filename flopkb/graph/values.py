"""Quantity values on one accelerator, for the graph queries, from `flopkb.hardware`'s model.

`flopkb.hardware.model.HardwareModel` evaluates specs and computed quantities (the numbers
`flopkb hw` shows); this module only adds what the graph needs on top: a `status` saying WHY a
value is absent (`null`: the part lacks a feature, so a claim on it is not applicable;
`missing`: no spec recorded; `error`: a formula that cannot be evaluated), and overridden specs
for `what-if` (a copy of the accelerator record with the new values, evaluated by a fresh
model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from flopkb.hardware.model import HardwareModel, finite_ratio
from flopkb.model import AcceleratorRecord, QuantityRecord, Spec

Status = Literal["spec", "override", "computed", "null", "missing", "error"]


@dataclass(frozen=True)
class Value:
    """A quantity on one part. `value` is None unless status is spec, override or computed."""

    value: float | None
    status: Status
    unit: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"value": self.value, "status": self.status, "unit": self.unit, "note": self.note}


class PartValues:
    """Quantities on one part, evaluated lazily by a HardwareModel (memoised there)."""

    def __init__(
        self,
        model: HardwareModel,
        accelerator: AcceleratorRecord,
        quantities: Mapping[str, QuantityRecord],
        overrides: Mapping[str, float] | None = None,
    ) -> None:
        self.overrides = dict(overrides or {})
        if self.overrides:
            specs = dict(accelerator.specs)
            for qid, number in self.overrides.items():
                old = specs.get(qid)
                unit = old.unit if old else quantities[qid].unit
                note = f"what-if (datasheet: {old.value if old else 'none'})"
                specs[qid] = Spec(value=number, unit=unit, note=note)
            accelerator = accelerator.model_copy(update={"specs": specs})
            # The model memoises per (part id, quantity): the overridden part needs its own model.
            model = HardwareModel(model.kb)
        self.model = model
        self.accelerator = accelerator
        self._quantities = quantities

    def get(self, qid: str) -> Value:
        """The value of quantity `qid` on this part, with its status."""
        acc, model = self.accelerator, self.model
        got = model.value(acc, qid)
        spec = acc.specs.get(qid)
        q = self._quantities.get(qid)
        unit = q.unit if q else (spec.unit if spec else None)
        computed = model.is_computed(qid)
        if got.value is not None:
            if computed:
                return Value(got.value, "computed", unit, q.formula if q else None)
            return Value(got.value, "override" if qid in self.overrides else "spec", unit, got.note)
        closure = model.inputs(qid)
        # A lacking feature wins over a missing figure: the claim is not applicable, not unknown.
        nulls = sorted(
            n for n in closure
            if not model.is_computed(n) and n in acc.specs and acc.specs[n].value is None
        )  # fmt: skip
        if nulls:
            note = spec.note if spec is not None and spec.note else f"null: {', '.join(nulls)}"
            return Value(None, "null", unit, note)
        absent = [n for n in closure if not model.is_computed(n) and n not in acc.specs]
        return Value(None, "missing" if absent else "error", unit, got.note)

    def all(self) -> dict[str, Value]:
        """Every spec of the part and every quantity of the KB, by id."""
        ids = set(self.accelerator.specs) | set(self._quantities)
        return {qid: self.get(qid) for qid in sorted(ids)}


def ratio(a: float | None, b: float | None) -> float | None:
    """b / a, or None where either is absent, a is (about) zero, or the ratio is not finite."""
    return finite_ratio(a, b)
