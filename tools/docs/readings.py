"""Reading an evidence record's sweep the way the verdict tables quote it: the judged rows, the
row at a point, the measured value with its band, the other sweep points."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from flopkb.model import EvidenceRecord, Measured

from .fmt import band, g3, x1
from .sources import MissingFigure


def judged(e: EvidenceRecord) -> list[dict[str, Any]]:
    """The sweep rows of the judged pass: a row with its own `pass` (A2's training row beside a
    forward verdict) is read only where a block asks for it by name."""
    return [r for r in e.sweep if "pass" not in r]


def point(e: EvidenceRecord, **where: Any) -> dict[str, Any]:
    """The one sweep row of `e` matching `where` (rows with their own `pass` only when `where`
    names one)."""
    rows = [r for r in (e.sweep if "pass" in where else judged(e))
            if all(r.get(k) == v for k, v in where.items())]
    if len(rows) != 1:
        raise MissingFigure(f"{e.claim}: {len(rows)} sweep points with {where} (expected one)")
    return rows[0]


def primary(e: EvidenceRecord, *keys: str) -> dict[str, Any]:
    """The sweep row at the evidence's own conditions (the judged point)."""
    return point(e, **{k: e.conditions[k] for k in keys})


def row_of_measured(e: EvidenceRecord, column: str,
                     rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The sweep row whose `column` is the measured value (where the verdict was read)."""
    value = e.measured.value if e.measured else None
    for r in judged(e) if rows is None else rows:
        if value is not None and math.isclose(r[column], value, rel_tol=1e-4):
            return r
    raise MissingFigure(f"{e.claim}: no sweep point with {column} = the measured {value}")


def measured(e: EvidenceRecord, unit: str = "x") -> str:
    m = e.measured
    if m is None:
        raise MissingFigure(f"{e.claim}: no measured value")
    if unit == "tokens":
        return f"{m.value:.0f} tokens [{m.low:.0f}, {m.high:.0f}]"
    return f"{g3(m.value)}{unit} {band(m.low, m.high)}"


def others(e: EvidenceRecord, key: str, label: Callable[[Any], str], column: str = "ratio",
           fmt: Callable[[float], str] = x1, exclude: dict[str, Any] | None = None,
           **fixed: Any) -> list[str]:
    """`<value> at <label>` for every sweep row with `fixed` whose `key` is not the judged one."""
    rows = [r for r in judged(e) if all(r.get(k) == v for k, v in fixed.items())
            and r.get(key) != e.conditions.get(key) and r is not exclude]
    return [f"{fmt(r[column])} at {label(r[key])}" for r in sorted(rows, key=lambda r: r[key])]


def value_text(m: Measured | None) -> str:
    """A judgement's measured value in the unit it carries: 4.89x, 1803 tokens, 48.6%."""
    if m is None or m.value is None:
        return ""
    v, unit = float(m.value), m.unit
    if unit == "x":
        return f"{g3(v)}x"
    if unit == "%":
        return f"{g3(v)}%"
    if unit == "tokens":
        return f"{v:.0f} tokens"
    if unit == "distinct results":
        return f"{v:.0f} distinct"
    return f"{v:.2f}" if unit == "fraction" else f"{g3(v)} {unit}"

