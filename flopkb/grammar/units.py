"""Absolute units: the one table of units flopkb converts, by physical dimension.

A small fixed vocabulary of dimensions, each with its base unit:

    flop_rate   FLOP/s     (FLOP/s, FLOPS, OP/s, OPS, TOPS, ... with SI prefixes k M G T P E)
    byte_rate   B/s        (B/s with SI prefixes; KiB/s, MiB/s, GiB/s, TiB/s binary)
    time        s          (s, ms, µs / us, ns)
    token_rate  tokens/s   (tokens/s, token/s, tok/s)
    bytes       B          (B, KB/kB, MB, GB, TB, PB decimal; KiB, MiB, GiB, TiB binary)
    fraction    1          (%)

OP/s and FLOP/s share a dimension: an INT8 "1,979 TOPS" and a measured GEMM rate are compared as
operations per second. Each unit also says what it counts (`counts`: "flop" or "op") so that the
spec check (`flopkb.check.units`) can still refuse an INT8 peak typed in TFLOP/s.

Why a table and not pint (the maintained units library): measured on this 2-core machine, pint
0.25 takes 0.3 s to import and 0.5 s to build its registry, and a conversion costs ~0.2 ms
(10,000 conversions: 2.0-2.5 s), against microseconds for a dictionary lookup; validate must
check 10^4 records in a few seconds. pint also does not know the vendor spellings the KB quotes
("TOPS", "KB" for 1000 bytes) and would need them defined anyway; and the whole vocabulary is
~90 spellings of six dimensions with power-of-ten or power-of-two factors, which a table states
exactly. Units are matched case-sensitively: "Mb" (megabit) or "MS" are not units here.
"""

from __future__ import annotations

from dataclasses import dataclass

Dimension = str

BASE_UNIT: dict[Dimension, str] = {
    "flop_rate": "FLOP/s",
    "byte_rate": "B/s",
    "time": "s",
    "token_rate": "tokens/s",
    "bytes": "B",
    "fraction": "1",
}

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}


class UnitError(ValueError):
    """An unknown unit, or a conversion between units of different dimensions."""


@dataclass(frozen=True)
class Unit:
    """A unit as written: its dimension, its factor to the dimension's base unit, what it counts."""

    name: str
    dimension: Dimension
    # base = value * multiply / divide: a sub-unit divides (5 / 1e6 is exactly 5e-06 where
    # 5 * 1e-6 is 4.9999999999999996e-06)
    multiply: float
    divide: float = 1.0
    counts: str | None = None

    @property
    def factor(self) -> float:
        return self.multiply / self.divide

    def to_base(self, value: float) -> float:
        return value * self.multiply / self.divide

    def from_base(self, value: float) -> float:
        return value * self.divide / self.multiply


def _table() -> dict[str, Unit]:
    units: dict[str, Unit] = {}

    def add(name: str, dimension: Dimension, multiply: float, divide: float = 1.0,
            counts: str | None = None) -> None:
        units[name] = Unit(name, dimension, multiply, divide, counts)

    for prefix, f in _SI.items():
        for spelling in ("FLOP/s", "FLOPS", "FLOPs/s"):
            add(prefix + spelling, "flop_rate", f, counts="flop")
        for spelling in ("OP/s", "OPS", "OPs/s"):
            add(prefix + spelling, "flop_rate", f, counts="op")
        add(prefix + "B/s", "byte_rate", f)
        add(prefix + "B", "bytes", f)
    for prefix, f in _BINARY.items():
        add(prefix + "B/s", "byte_rate", f)
        add(prefix + "B", "bytes", f)
    # "kB" and "KB" are both 1000 bytes (JEDEC's KB = 1024 is not what datasheets print for HBM)
    for name, divide in (("s", 1.0), ("ms", 1e3), ("\u00b5s", 1e6), ("\u03bcs", 1e6),
                         ("us", 1e6), ("ns", 1e9)):
        add(name, "time", 1.0, divide)
    for name in ("tokens/s", "token/s", "tok/s"):
        add(name, "token_rate", 1.0)
    add("%", "fraction", 1.0, 100.0)
    add("1", "fraction", 1.0)
    return units


UNITS: dict[str, Unit] = _table()
# Longest spelling first, so a pattern built from them prefers "TFLOP/s" over "T".
SPELLINGS: tuple[str, ...] = tuple(sorted((u for u in UNITS if u != "1"), key=len, reverse=True))


def unit(name: str) -> Unit:
    """The unit spelled `name`, or UnitError."""
    found = UNITS.get(name)
    if found is None:
        raise UnitError(f"unknown unit {name[:40]!r}")
    return found


def dimension_of(name: str) -> Dimension | None:
    """The dimension of the unit spelled `name`, or None when it is not a unit of the table."""
    found = UNITS.get(name)
    return None if found is None else found.dimension


def compatible(dim_a: Dimension | None, dim_b: Dimension | None) -> bool:
    """Whether quantities of these two dimensions can be compared (both known and equal)."""
    return dim_a is not None and dim_a == dim_b


def to_base(value: float, name: str) -> float:
    """`value` in unit `name`, in its dimension's base unit (740 TFLOP/s -> 7.4e14)."""
    return unit(name).to_base(value)


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """`value` in `from_unit` expressed in `to_unit`; UnitError when either is unknown or their
    dimensions differ (3350 GB/s -> 3.35 TB/s; 1 ms -> s is fine; 1 ms -> GB is an error)."""
    a, b = unit(from_unit), unit(to_unit)
    if a.dimension != b.dimension:
        raise UnitError(
            f"cannot convert {from_unit!r} ({a.dimension}) to {to_unit!r} ({b.dimension})"
        )
    return b.from_base(a.to_base(value))
