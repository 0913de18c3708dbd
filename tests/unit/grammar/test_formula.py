"""The whitelist formula evaluator (flopkb.grammar.formula): arithmetic over quantity ids, never
eval."""

from __future__ import annotations

import math

import pytest

from flopkb.grammar.formula import FormulaError, parse_formula


def test_arithmetic_over_names() -> None:
    f = parse_formula("bf16_tensor_flops / hbm_bandwidth")
    assert f.names == {"bf16_tensor_flops", "hbm_bandwidth"}
    assert f.evaluate({"bf16_tensor_flops": 989.4e12, "hbm_bandwidth": 3.35e12}) == pytest.approx(
        295.34, rel=1e-3
    )
    assert parse_formula("-(a + 2) * b ** 2").evaluate({"a": 1, "b": 3}) == -27


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "a.__class__",
        "open('x')",
        "a[0]",
        "a if b else c",
        "a < b",
        "lambda: 1",
        "'text'",
        "True",
        "_private",
        "a; b",
        "x" * 600,
        # under the length limit (481 characters), so the nesting itself must be refused
        "(" * 240 + "1" + ")" * 240,
    ],
)
def test_outside_the_whitelist(text: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(text)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("a / 0", {"a": 1}),
        ("a / (b - b)", {"a": 1, "b": 2}),
        ("a * 1e308 * 10", {"a": 10}),
        ("a ** 100", {"a": 2}),
        ("a", {"a": math.nan}),
        ("a", {"a": None}),
        ("a", {}),
    ],
)
def test_evaluation_errors_are_formula_errors(text: str, values: dict) -> None:
    with pytest.raises(FormulaError):
        parse_formula(text).evaluate(values)


def test_negative_base_to_a_fractional_power_is_a_formula_error() -> None:
    with pytest.raises(FormulaError, match="not a real number"):
        parse_formula("x ** 0.5").evaluate({"x": -8.0})
