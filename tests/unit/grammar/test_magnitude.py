"""The magnitude grammar (flopkb.grammar.magnitude): every documented example parses, the rest do
not."""

from __future__ import annotations

import pytest

from flopkb.grammar.magnitude import MagnitudeError, parse_magnitude


@pytest.mark.parametrize(
    ("text", "kind", "low", "high", "bound", "figures"),
    [
        ("2-8x", "ratio", 2.0, 8.0, "range", ("2", "8")),
        ("2\u20138\u00d7", "ratio", 2.0, 8.0, "range", ("2", "8")),
        ("~20%", "percent", 20.0, 20.0, "approx", ("20",)),
        ("6x at 16K", "ratio", 6.0, 6.0, "exact", ("6", "16")),
        ("3.73x", "ratio", 3.73, 3.73, "exact", ("3.73",)),
        ("crossover at 2K", "crossover", 2048, 2048, "exact", ("2",)),
        ("8x", "ratio", 8.0, 8.0, "exact", ("8",)),
        ("up to 3x", "ratio", None, 3.0, "upper", ("3",)),
        ("at least 2x", "ratio", 2.0, None, "lower", ("2",)),
        ("92%", "percent", 92.0, 92.0, "exact", ("92",)),
        ("3:1", "proportion", 3.0, 3.0, "exact", ("3", "1")),
        ("P=128", "value", 128.0, 128.0, "exact", ("128",)),
        ("qualitative", "qualitative", None, None, "none", ()),
    ],
)
def test_grammar_examples(text: str, kind: str, low, high, bound: str, figures: tuple) -> None:
    m = parse_magnitude(text)
    assert (m.kind, m.low, m.high, m.bound, m.figures) == (kind, low, high, bound, figures)


def test_condition_keeps_the_size_as_written() -> None:
    assert parse_magnitude("6x at 16K").condition == {"at": 16384, "at_text": "16K"}
    assert parse_magnitude("crossover at 2K").as_dict()["condition"] == {"at_text": "2K"}


@pytest.mark.parametrize(
    "text", ["two to eight times", "8-2x", "fast", "", "x8", "2-8", "3:0", "6x at"]
)
def test_outside_the_grammar(text: str) -> None:
    with pytest.raises(MagnitudeError, match="expected"):
        parse_magnitude(text)


@pytest.mark.parametrize(
    ("text", "low", "high", "unit", "dimension", "bound", "figures"),
    [
        ("740 TFLOP/s", 740e12, 740e12, "TFLOP/s", "flop_rate", "exact", ("740",)),
        ("1,979 TOPS", 1979e12, 1979e12, "TOPS", "flop_rate", "exact", ("1,979",)),
        ("3.35 TB/s", 3.35e12, 3.35e12, "TB/s", "byte_rate", "exact", ("3.35",)),
        ("1.7 ms", 1.7e-3, 1.7e-3, "ms", "time", "exact", ("1.7",)),
        ("5 \u00b5s", 5e-6, 5e-6, "\u00b5s", "time", "exact", ("5",)),
        ("up to 80 GB", None, 80e9, "GB", "bytes", "upper", ("80",)),
        ("at least 60 MiB", 60 * 2.0**20, None, "MiB", "bytes", "lower", ("60",)),
        ("~4000 tokens/s", 4000.0, 4000.0, "tokens/s", "token_rate", "approx", ("4000",)),
        ("2-3 TB/s", 2e12, 3e12, "TB/s", "byte_rate", "range", ("2", "3")),
    ],
)
def test_absolute_magnitudes_in_base_units(
    text: str, low, high, unit: str, dimension: str, bound: str, figures: tuple
) -> None:
    m = parse_magnitude(text)
    assert m.kind == "absolute"
    assert (m.unit, m.dimension, m.bound, m.figures) == (unit, dimension, bound, figures)
    assert m.low == (None if low is None else pytest.approx(low))
    assert m.high == (None if high is None else pytest.approx(high))


def test_absolute_keeps_the_at_condition() -> None:
    m = parse_magnitude("740 TFLOP/s at 16K")
    assert m.condition == {"at": 16384, "at_text": "16K"}
    assert m.as_dict()["dimension"] == "flop_rate"


def test_from_to_is_a_change_ending_at_the_second_figure() -> None:
    m = parse_magnitude("from 12 ms to 4 ms")
    assert (m.kind, m.dimension, m.unit) == ("change", "time", "ms")
    assert m.low == m.high == pytest.approx(4e-3)
    assert m.condition["from"] == pytest.approx(12e-3)
    assert m.figures == ("12", "4")
    with pytest.raises(MagnitudeError, match="one dimension"):
        parse_magnitude("from 12 ms to 4 GB")


def test_existing_kinds_have_no_dimension() -> None:
    for text in ("2-8x", "92%", "crossover at 2K", "3:1", "P=128", "qualitative"):
        assert parse_magnitude(text).dimension is None


@pytest.mark.parametrize("text", ["740 TFlop/s", "5 Mb", "1,97 TOPS", "3 TB/s/s", "12 MS"])
def test_unknown_units_do_not_parse(text: str) -> None:
    with pytest.raises(MagnitudeError, match="expected"):
        parse_magnitude(text)


@pytest.mark.parametrize(
    ("text", "reading"),
    [
        ("\u09ea" "x", "4x"),  # Bengali four, which looks like an 8
        ("\U0001d7d2" "x", "4x"),  # mathematical bold four
        ("\U0001d7fa" "-8x", "4-8x"),  # mathematical monospace four
        ("\u0662-\u0668x", "2-8x"),  # Arabic-Indic two and eight
        ("\uff16x at 16K", "6x at 16K"),  # fullwidth six
        ("P=\u09e7\u09e8\u09ee", "P=128"),  # Bengali 128
        ("crossover at \u0968K", "crossover at 2K"),  # Devanagari two
        ("1,9\u096d9 TOPS", "1,979 TOPS"),
    ],
)
def test_figures_in_other_digits_are_refused_with_their_ascii_reading(
    text: str, reading: str
) -> None:
    """Python's `float` reads every script's decimal digits: the grammar takes ASCII only, as
    the formula grammar does, and the hint says what the figure would have read as."""
    with pytest.raises(MagnitudeError, match="expected ASCII digits 0-9") as caught:
        parse_magnitude(text)
    assert caught.value.hint is not None and repr(reading) in caught.value.hint
