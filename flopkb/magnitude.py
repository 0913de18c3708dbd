"""The magnitude grammar: every quoted figure in a claim row parses into a checkable value.

    magnitude   := "qualitative" | quantity [" at " size] | "crossover at " size | name "=" number
    quantity    := ["~" | "up to " | "at least " | ">=" | "<="] number ["-" number] unit
    unit        := "x" | "%" | ":" number          (ratio, percent, proportion a:b)
    size        := number [K | M | G]              (K = 1024: sequence lengths are powers of two)
    number      := digits ["." digits]

Examples: `2-8x`, `~20%`, `6x at 16K`, `3.73x`, `crossover at 2K`, `8x`, `up to 3x`, `92%`,
`3:1`, `P=128`, `qualitative`. En and em dashes, the multiplication sign and a space before the unit
are accepted.
`figures` keeps each number exactly as written so that rule 2 (no new figures) can look for it
in the prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from flopkb import budget

MagnitudeKind = Literal["ratio", "percent", "proportion", "crossover", "value", "qualitative"]
Bound = Literal["exact", "range", "upper", "lower", "approx", "none"]

_SUFFIX = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_NUMBER = r"\d+(?:\.\d+)?"
_SIZE = rf"(?P<size>{_NUMBER})\s*(?P<suffix>[kKmMgG]?)"
_QUALIFIER = r"(?P<qual>~|≈|up to\s+|at least\s+|>=\s*|<=\s*|≥\s*|≤\s*)?"
_QUANTITY = re.compile(
    rf"^{_QUALIFIER}(?P<lo>{_NUMBER})(?:\s*-\s*(?P<hi>{_NUMBER}))?\s*(?P<unit>x|%)"
    rf"(?:\s+at\s+{_SIZE}(?:\s+tokens)?)?$",
    re.IGNORECASE,
)
_PROPORTION = re.compile(rf"^(?P<a>{_NUMBER})\s*:\s*(?P<b>{_NUMBER})$")
_CROSSOVER = re.compile(rf"^crossover\s+at\s+{_SIZE}$", re.IGNORECASE)
_VALUE = re.compile(rf"^(?P<name>[A-Za-z_][A-Za-z_0-9]*)\s*=\s*(?P<val>{_NUMBER})$")
_FIGURE = re.compile(_NUMBER)


class MagnitudeError(ValueError):
    """A magnitude outside the grammar; the message says what was expected."""


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
        }


def _normalise(text: str) -> str:
    text = text.strip().replace("\u2013", "-").replace("\u2014", "-").replace("\u2212", "-")
    return re.sub(r"\s+", " ", text.replace("\u00d7", "x"))


def _size(match: re.Match[str]) -> tuple[int, str]:
    value = float(match["size"]) * _SUFFIX[match["suffix"].lower()]
    return int(value), f"{match['size']}{match['suffix']}"


def parse_magnitude(text: str) -> Magnitude:
    """Parse `text` in the magnitude grammar, or raise MagnitudeError."""
    if len(text) > budget.MAX_MAGNITUDE_CHARS:
        raise MagnitudeError(
            f"expected a magnitude of at most {budget.MAX_MAGNITUDE_CHARS} characters, "
            f"got {len(text)}"
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
        lo = float(m["lo"])
        hi = float(m["hi"]) if m["hi"] else lo
        if hi < lo:
            raise MagnitudeError(f"expected a range low-high with low <= high, got {text!r}")
        qual = (m["qual"] or "").strip().lower()
        bound: Bound = "range" if m["hi"] else "exact"
        low: float | None = lo
        high: float | None = hi
        if qual in {"~", "≈"}:
            bound = "approx"
        elif qual in {"up to", "<=", "≤"}:
            bound, low = "upper", None
        elif qual in {"at least", ">=", "≥"}:
            bound, high = "lower", None
        condition: dict[str, Any] = {}
        if m["size"]:
            at, at_text = _size(m)
            condition = {"at": at, "at_text": at_text}
        kind: MagnitudeKind = "ratio" if m["unit"].lower() == "x" else "percent"
        return Magnitude(text, kind, low, high, m["unit"].lower(), bound, condition, figures)
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
        f"'P=128' or 'qualitative', got {text!r}"
    )
