"""The unit table (flopkb.grammar.units): conversions, dimensions and the spec check's stricter
reading."""

from __future__ import annotations

import pytest

from flopkb.check.units import convert as spec_convert
from flopkb.grammar.units import UnitError, compatible, convert, dimension_of, to_base


@pytest.mark.parametrize(
    ("value", "a", "b", "expected"),
    [
        (3350, "GB/s", "TB/s", 3.35),
        (1, "GiB", "MiB", 1024),
        (1, "KB", "B", 1000),
        (1, "KiB", "B", 1024),
        (1.7, "ms", "s", 1.7e-3),
        (5, "\u00b5s", "ns", 5000),
        (5, "us", "\u00b5s", 5),
        (1979, "TOPS", "TFLOP/s", 1979),
        (0.5, "PFLOP/s", "TFLOPS", 500),
        (92, "%", "1", 0.92),
        (4000, "tok/s", "tokens/s", 4000),
    ],
)
def test_convert(value: float, a: str, b: str, expected: float) -> None:
    assert convert(value, a, b) == pytest.approx(expected)


def test_sub_units_convert_exactly() -> None:
    assert to_base(5, "\u00b5s") == 5e-6
    assert to_base(4, "ms") == 4e-3


def test_incompatible_and_unknown_units_raise() -> None:
    with pytest.raises(UnitError, match="cannot convert"):
        convert(1, "ms", "GB")
    with pytest.raises(UnitError, match="unknown unit"):
        convert(1, "furlong", "s")


def test_compatible() -> None:
    assert compatible(dimension_of("TOPS"), dimension_of("GFLOP/s"))
    assert not compatible(dimension_of("TB/s"), dimension_of("TB"))
    assert not compatible(None, None)
    assert dimension_of("Mb") is None


def test_the_spec_check_keeps_ops_apart_from_flops() -> None:
    assert spec_convert(3350, "GB/s", "TB/s") == pytest.approx(3.35)
    assert spec_convert(1979, "TOPS", "TFLOP/s") is None
    assert spec_convert(1, "TFLOPS", "TFLOP/s") == 1
