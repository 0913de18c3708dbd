"""The magnitude grammar: every quoted figure in a claim row parses into a checkable value.

    magnitude   := "qualitative" | quantity [" at " size] | "crossover at " size | name "=" number
                 | absolute [" at " size] | "from " number [unit] " to " number unit
    quantity    := [qualifier] number ["-" number] ("x" | "%")     (ratio, percent)
                 | number ":" number                               (proportion a:b)
    absolute    := [qualifier] number ["-" number] unit            (a figure in a physical unit)
    qualifier   := "~" | "up to " | "at least " | ">=" | "<="
    unit        := FLOP/s | FLOPS | OP/s | OPS (SI prefixes: TFLOP/s, TOPS) | B/s (GB/s, TB/s,
                   GiB/s) | s | ms | µs | us | ns | tokens/s | tok/s | B (KB, MB, GB, TB; KiB,
                   MiB, GiB)                               (the table of flopkb.grammar.units)
    size        := number [K | M | G]              (K = 1024: sequence lengths are powers of two)
    number      := digits ["." digits]  |  thousands groups "1,979" ["." digits]

Examples: `2-8x`, `~20%`, `6x at 16K`, `3.73x`, `crossover at 2K`, `8x`, `up to 3x`, `92%`,
`3:1`, `P=128`, `qualitative`; absolute: `740 TFLOP/s`, `1,979 TOPS`, `3.35 TB/s`, `1.7 ms`,
`up to 80 GB`, `~4000 tokens/s`, `from 12 ms to 4 ms`. En and em dashes, the multiplication sign
and a space before the unit are accepted.

An absolute magnitude has kind "absolute", `dimension` one of flopkb.grammar.units' vocabulary
("flop_rate", "byte_rate", "time", "token_rate", "bytes"), `unit` the unit as written, and `low` /
`high` in the dimension's base unit (FLOP/s, B/s, s, tokens/s, B): `740 TFLOP/s` has low = high =
7.4e14. `from 12 ms to 4 ms` is kind "change": `low` = `high` = the figure it ends at (4e-3 s),
`condition` {"from": 0.012, "from_text": "12 ms", "to_text": "4 ms"}; both ends of one dimension.
`figures` keeps each number exactly as written ("1,979") so that rule 2 (no new figures) can look
for it in the prose.

Digits are ASCII 0-9 only, as in the formula grammar: a Bengali four (U+09EA, which looks like
an 8), a mathematical bold or a fullwidth digit is refused, the hint giving the ASCII reading
(`flopkb.grammar.text.foreign_digits`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from flopkb import budget
from flopkb.grammar import units
from flopkb.grammar.text import ascii_digits, foreign_digits

MagnitudeKind = Literal[
    "ratio", "percent", "proportion", "crossover", "value", "qualitative", "absolute", "change"
]
Bound = Literal["exact", "range", "upper", "lower", "approx", "none"]

_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_NUMBER = r"\d+(?:\.\d+)?"
# a figure as quoted: thousands groups ("1,979", "12,000.5") or plain digits
_FIGURE_NUMBER = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_SIZE = rf"(?P<size>{_NUMBER})\s*(?P<suffix>[kKmMgG]?)"
_QUALIFIER = r"(?P<qual>~|≈|up to\s+|at least\s+|>=\s*|<=\s*|≥\s*|≤\s*)?"
_QUANTITY = re.compile(
    rf"^{_QUALIFIER}(?P<lo>{_FIGURE_NUMBER})(?:\s*-\s*(?P<hi>{_FIGURE_NUMBER}))?\s*(?P<unit>x|%)"
    rf"(?:\s+at\s+{_SIZE}(?:\s+tokens)?)?$",
    re.IGNORECASE,
)
_UNIT = "|".join(re.escape(u) for u in units.SPELLINGS if units.UNITS[u].dimension != "fraction")
_ABSOLUTE = re.compile(
    rf"^{_QUALIFIER}(?P<lo>{_FIGURE_NUMBER})(?:\s*-\s*(?P<hi>{_FIGURE_NUMBER}))?\s*"
    rf"(?P<unit>{_UNIT})(?:\s+at\s+{_SIZE}(?:\s+tokens)?)?$"
)
_CHANGE = re.compile(
    rf"^from\s+(?P<a>{_FIGURE_NUMBER})\s*(?P<ua>{_UNIT})?\s+to\s+(?P<b>{_FIGURE_NUMBER})\s*"
    rf"(?P<ub>{_UNIT})$",
    re.IGNORECASE,
)
_PROPORTION = re.compile(rf"^(?P<a>{_NUMBER})\s*:\s*(?P<b>{_NUMBER})$")
_CROSSOVER = re.compile(rf"^crossover\s+at\s+{_SIZE}$", re.IGNORECASE)
_VALUE = re.compile(rf"^(?P<name>[A-Za-z_][A-Za-z_0-9]*)\s*=\s*(?P<val>{_NUMBER})$")
_FIGURE = re.compile(_FIGURE_NUMBER)


class MagnitudeError(ValueError):
    """A magnitude outside the grammar; the message says what was expected, `hint` (when set)
    how to write it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Magnitude:
    """A parsed magnitude: the interval [low, high] in `unit`, with its condition."""

    text: str
    kind: MagnitudeKind
    low: float | None
    high: float | None
    unit: str | None
    bound: Bound
    condition: dict[str, Any] = field(default_factory=dict)
    figures: tuple[str, ...] = ()
    # the physical dimension of an absolute (or change) magnitude, flopkb.grammar.units' vocabulary
    dimension: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "kind": self.kind,
            "low": self.low,
            "high": self.high,
            "unit": self.unit,
            "bound": self.bound,
            "condition": dict(self.condition),
            "figures": list(self.figures),
            "dimension": self.dimension,
        }


def _normalise(text: str) -> str:
    text = text.strip().replace("\u2013", "-").replace("\u2014", "-").replace("\u2212", "-")
    return re.sub(r"\s+", " ", text.replace("\u00d7", "x"))


def _size(match: re.Match[str]) -> tuple[int, str]:
    value = float(match["size"]) * _SUFFIX[match["suffix"].lower()]
    return int(value), f"{match['size']}{match['suffix']}"


def _figure(text: str) -> float:
    return float(text.replace(",", ""))


def _interval(match: re.Match[str], text: str) -> tuple[float | None, float | None, Bound]:
    """low, high and bound of `[qualifier] lo [- hi]`, in the unit as written."""
    lo = _figure(match["lo"])
    hi = _figure(match["hi"]) if match["hi"] else lo
    if hi < lo:
        raise MagnitudeError(f"expected a range low-high with low <= high, got {text!r}")
    qual = (match["qual"] or "").strip().lower()
    bound: Bound = "range" if match["hi"] else "exact"
    low: float | None = lo
    high: float | None = hi
    if qual in {"~", "≈"}:
        bound = "approx"
    elif qual in {"up to", "<=", "≤"}:
        bound, low = "upper", None
    elif qual in {"at least", ">=", "≥"}:
        bound, high = "lower", None
    return low, high, bound


def _at(match: re.Match[str]) -> dict[str, Any]:
    if not match["size"]:
        return {}
    at, at_text = _size(match)
    return {"at": at, "at_text": at_text}


def _base(value: float | None, unit: units.Unit) -> float | None:
    return None if value is None else unit.to_base(value)


def _change(match: re.Match[str], text: str, figures: tuple[str, ...]) -> Magnitude:
    """`from A [unit] to B unit`: both ends of one dimension; low = high = B in base units."""
    to_unit = units.unit(match["ub"])
    from_unit = units.unit(match["ua"]) if match["ua"] else to_unit
    if from_unit.dimension != to_unit.dimension:
        raise MagnitudeError(
            f"expected both ends of 'from A to B' in one dimension, got {from_unit.name} "
            f"({from_unit.dimension}) and {to_unit.name} ({to_unit.dimension}) in {text!r}"
        )
    start = from_unit.to_base(_figure(match["a"]))
    end = to_unit.to_base(_figure(match["b"]))
    condition = {
        "from": start,
        "from_text": f"{match['a']} {from_unit.name}",
        "to_text": f"{match['b']} {to_unit.name}",
    }
    return Magnitude(
        text, "change", end, end, to_unit.name, "exact", condition, figures, to_unit.dimension
    )


def parse_magnitude(text: str) -> Magnitude:
    """Parse `text` in the magnitude grammar, or raise MagnitudeError."""
    if len(text) > budget.MAX_MAGNITUDE_CHARS:
        raise MagnitudeError(
            f"expected a magnitude of at most {budget.MAX_MAGNITUDE_CHARS} characters, "
            f"got {len(text)}"
        )
    foreign = foreign_digits(text)
    if foreign is not None:
        raise MagnitudeError(
            f"expected ASCII digits 0-9, got {foreign.describe()} in {text!r}",
            f"it reads as {ascii_digits(text)!r}: write that, in ASCII digits",
        )
    norm = _normalise(text)
    figures = tuple(_FIGURE.findall(norm))
    for figure in figures:
        if len(figure) > budget.MAX_NUMBER_CHARS:
            # float("9" * 400) is inf, and a crossover size of inf tokens has no int value
            raise MagnitudeError(
                f"expected numbers of at most {budget.MAX_NUMBER_CHARS} characters, "
                f"got one of {len(figure)}"
            )
    if norm.lower() == "qualitative":
        return Magnitude(text, "qualitative", None, None, None, "none")
    if m := _QUANTITY.match(norm):
        low, high, bound = _interval(m, text)
        kind: MagnitudeKind = "ratio" if m["unit"].lower() == "x" else "percent"
        return Magnitude(text, kind, low, high, m["unit"].lower(), bound, _at(m), figures)
    if m := _ABSOLUTE.match(norm):
        unit = units.unit(m["unit"])
        low, high, bound = _interval(m, text)
        return Magnitude(
            text, "absolute", _base(low, unit), _base(high, unit), unit.name, bound, _at(m),
            figures, unit.dimension,
        )  # fmt: skip
    if m := _CHANGE.match(norm):
        return _change(m, text, figures)
    if m := _CROSSOVER.match(norm):
        at, at_text = _size(m)
        condition = {"at_text": at_text}
        return Magnitude(text, "crossover", at, at, "tokens", "exact", condition, figures)
    if m := _PROPORTION.match(norm):
        a, b = float(m["a"]), float(m["b"])
        if b == 0:
            raise MagnitudeError(f"expected a proportion a:b with b > 0, got {text!r}")
        return Magnitude(text, "proportion", a / b, a / b, ":", "exact", {"a": a, "b": b}, figures)
    if m := _VALUE.match(norm):
        val = float(m["val"])
        return Magnitude(text, "value", val, val, None, "exact", {"name": m["name"]}, figures)
    raise MagnitudeError(
        f"expected a magnitude such as '2-8x', '~20%', '6x at 16K', 'crossover at 2K', '3:1', "
        f"'P=128', '740 TFLOP/s', '1.7 ms', 'from 12 ms to 4 ms' or 'qualitative', got {text!r}"
    )
