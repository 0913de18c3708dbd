"""Derived rows are computed: a `basis: derived` row's formula, evaluated on the KB's specs, must
land inside what its magnitude says, read with the magnitude's own rounding.

What a magnitude covers (`covers`), with h half a unit of the last digit quoted ("3" -> 0.5,
"3.73" -> 0.005, "1,979" -> 0.5):

- exact `3x`, `92%`, `P=128`, `740 TFLOP/s`: [v - h, v + h)   (`3x` covers [2.5, 3.5))
- approximate `~20%`: the exact interval widened by 10% of the figure on each side, closed
  (`~20%` covers [17.5, 22.5])
- range `2-8x`: [lo - h_lo, hi + h_hi)
- `up to 3x`: below 3.5; `at least 2x`: from 1.5
- proportion `3:1`: a/b with a's rounding, [(a - h_a) / b, (a + h_a) / b)
- `crossover at 2K`: the size's rounding, [1.5K, 2.5K) = [1536, 2560)
- `from 12 ms to 4 ms`: the figure it ends at, as an exact absolute figure
- `qualitative`: nothing to compare (no figure)

Units: the formula's value is a plain number. A percent magnitude reads it as a number of percent
(write `100 * a / b`); an absolute magnitude reads it in the unit of the row's `quantity` record
(a formula `hbm_bandwidth` on a quantity in TB/s is 3.35 TB/s), which must be of the magnitude's
dimension; every other kind reads it as written. An `at 16K` condition is not part of the
comparison: a formula over datasheet specs has no sequence length.

A value that stays inside within a relative 1e-9 (float noise of the formula) counts as inside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from flopkb.grammar import units
from flopkb.grammar.formula import FormulaError
from flopkb.grammar.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.hardware.model import HardwareModel, NotApplicable, parsed
from flopkb.model import Basis, ClassRecord, HardwareParameter

APPROX_WIDENING = 0.10
_FLOAT_SLACK = 1e-9


@dataclass(frozen=True)
class Cover:
    """What a magnitude covers, in the units the formula's value is read in: [low, high) or
    [low, high] when `closed`; None bounds are open."""

    low: float | None
    high: float | None
    closed: bool = False

    def holds(self, value: float) -> bool:
        slack = _FLOAT_SLACK * abs(value)
        if self.low is not None and value < self.low - slack:
            return False
        if self.high is None:
            return True
        return value <= self.high + slack if self.closed else value < self.high - slack

    def text(self) -> str:
        lo = "(-inf" if self.low is None else f"[{self.low:.6g}"
        hi = "inf)" if self.high is None else f"{self.high:.6g}{']' if self.closed else ')'}"
        return f"{lo}, {hi}"


class NoCover(ValueError):
    """The magnitude cannot be compared with a formula's value (the message says why)."""


def half_unit(figure: str) -> float:
    """Half a unit of the last quoted digit: '3' -> 0.5, '3.73' -> 0.005, '1,979' -> 0.5."""
    return 0.5 * 10.0 ** (-len(figure.partition(".")[2]))


def _number(figure: str) -> float:
    return float(figure.replace(",", ""))


def covers(magnitude: Magnitude, quantity_unit: str | None = None) -> Cover | None:
    """What `magnitude` covers for a formula's value; None for a qualitative magnitude.

    Raises NoCover when an absolute magnitude's value cannot be read in `quantity_unit`.
    """
    kind = magnitude.kind
    if kind == "qualitative":
        return None
    figs = magnitude.figures
    if kind == "crossover":
        # `2K` is 2048 tokens: half a unit of "2" is half a K
        at = float(magnitude.low or 0)
        written_size = _number(figs[0])
        h = half_unit(figs[0]) * (at / written_size if written_size else 1.0)
        return Cover(at - h, at + h)
    if kind == "proportion":
        a, b = magnitude.condition["a"], magnitude.condition["b"]
        h = half_unit(figs[0])
        return Cover((a - h) / b, (a + h) / b)
    if kind == "change":
        end = figs[-1]
        cover = Cover(_number(end) - half_unit(end), _number(end) + half_unit(end))
        return _scaled(cover, magnitude, quantity_unit)
    # ratio, percent, value, absolute: the figures as written; an `at` size is the last figure,
    # and a named value's figure is its last (`d2=64` also has the 2 of its name)
    written = figs[:-1] if magnitude.condition.get("at_text") else figs
    if kind == "value":
        written = figs[-1:]
    lo_fig, hi_fig = written[0], written[-1]
    lo, hi = _number(lo_fig) - half_unit(lo_fig), _number(hi_fig) + half_unit(hi_fig)
    cover = Cover(lo, hi)
    if magnitude.bound == "upper":
        cover = Cover(None, hi)
    elif magnitude.bound == "lower":
        cover = Cover(lo, None)
    elif magnitude.bound == "approx":
        widen = APPROX_WIDENING * _number(lo_fig)
        cover = Cover(lo - widen, hi + widen, closed=True)
    return _scaled(cover, magnitude, quantity_unit) if kind == "absolute" else cover


def _scaled(cover: Cover, magnitude: Magnitude, quantity_unit: str | None) -> Cover:
    """An absolute cover, written in the magnitude's unit, in the row quantity's unit."""
    target = units.UNITS.get(quantity_unit or "")
    if target is None or target.dimension != magnitude.dimension:
        raise NoCover(
            f"the formula's value is in {quantity_unit!r} (the row's quantity), not a unit of "
            f"{magnitude.dimension} like the magnitude's {magnitude.unit!r}"
        )

    def conv(x: float | None) -> float | None:
        return None if x is None else units.convert(x, magnitude.unit or "", target.name)

    return Cover(conv(cover.low), conv(cover.high), cover.closed)


@dataclass(frozen=True)
class Computed:
    """A derived row's formula on one accelerator: its value (None with a note when it does not
    evaluate there) and whether the magnitude covers it (None when there is nothing to compare)."""

    accelerator: str
    value: float | None
    agrees: bool | None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": _rounded(self.value), "agrees": self.agrees}
        if self.note:
            out["note"] = self.note
        return out


def _rounded(value: float | None) -> float | None:
    if value is None or value == 0 or not math.isfinite(value):
        return value
    return round(value, max(0, 6 - math.floor(math.log10(abs(value))) - 1))


def judge(value: float, magnitude_text: str, quantity_unit: str | None) -> tuple[bool | None, str]:
    """(agrees, what the magnitude covers) for one computed value; agrees None when the magnitude
    is qualitative or does not parse (FKB203 reports that), False with the reason on NoCover."""
    try:
        magnitude = parse_magnitude(magnitude_text)
    except MagnitudeError:
        return None, ""
    try:
        cover = covers(magnitude, quantity_unit)
    except NoCover as exc:
        return False, str(exc)
    if cover is None:
        return None, ""
    return cover.holds(value), cover.text()


def quantity_unit(model: HardwareModel, row: HardwareParameter) -> str | None:
    quantity = model.quantities.get(row.quantity)
    return quantity.unit if quantity is not None else None


def compute_row(
    model: HardwareModel, record: ClassRecord, row: HardwareParameter, accelerator: str
) -> Computed:
    """A derived row's formula on one accelerator, judged against the row's magnitude."""
    acc = model.kb.accelerators.get(accelerator)
    if acc is None:
        return Computed(accelerator, None, None, f"no accelerator record {accelerator!r}")
    formula = parsed(row.formula or "")
    if isinstance(formula, FormulaError):
        return Computed(accelerator, None, None, str(formula))
    try:
        value = model.evaluate(formula, acc)
    except NotApplicable as exc:
        return Computed(accelerator, None, None, f"not applicable: {exc}")
    except FormulaError as exc:
        return Computed(accelerator, None, None, str(exc))
    agrees, cover = judge(value, row.magnitude, quantity_unit(model, row))
    note = None if agrees is not False else f"magnitude {row.magnitude!r} covers {cover}"
    return Computed(accelerator, value, agrees, note)


def computed_values(
    model: HardwareModel, record: ClassRecord, row: HardwareParameter
) -> dict[str, Computed] | None:
    """A derived row's formula on every accelerator its class lists; None for other rows."""
    if row.basis is not Basis.derived or not row.formula:
        return None
    return {acc: compute_row(model, record, row, acc) for acc in record.affected_by_hardware}


def summary(values: dict[str, dict[str, Any]] | None) -> str:
    """One short text for tables from `{acc: Computed.as_dict()}`: the value (or its range over
    the parts), and "disagrees" where the magnitude does not cover it."""
    if not values:
        return ""
    got = [c["value"] for c in values.values() if c.get("value") is not None]
    if not got:
        return "n/a"
    lo, hi = min(got), max(got)
    text = f"{lo:.4g}" if math.isclose(lo, hi, rel_tol=1e-9) else f"{lo:.4g}..{hi:.4g}"
    if any(c.get("agrees") is False for c in values.values()):
        text += ", disagrees"
    return text
