"""The magnitude grammar (flopkb.magnitude): every documented example parses, the rest do not."""

from __future__ import annotations

import pytest

from flopkb.magnitude import MagnitudeError, parse_magnitude


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
