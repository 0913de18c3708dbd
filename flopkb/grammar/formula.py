"""A whitelist evaluator for computed-quantity formulas: never `eval`.

Grammar: numbers, quantity ids, `+ - * / **`, unary minus and parentheses. Anything else (calls,
attributes, subscripts, names like `__import__`, comparisons) is rejected at parse time with a
message naming the offending piece. Division by zero, overflow and NaN are errors at evaluation.

The text is tokenised by our own ASCII grammar before Python's parser sees it: Python would fold
a fullwidth `\uff42f16_tensor_flops` into `bf16_tensor_flops` (NFKC), read `0x10` and `1_000` as
numbers and drop a `# comment`; none of those is a formula a reviewer can trust at a glance.
Numbers are plain decimals (`3`, `0.5`, `1e12`), at most `budget.MAX_NUMBER_CHARS` characters.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from flopkb import budget

MAX_FORMULA_LENGTH = budget.MAX_FORMULA_CHARS
# One token at a time, ASCII only (`re.ASCII`: `\d` is not a fullwidth digit, `\s` no exotic
# space). A number may not run into letters, `_` or a second point: `0x10`, `1_000`, `1.2.3`.
_TOKEN = re.compile(
    r"\s*(?:(?P<number>[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?![A-Za-z0-9_.])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[-+*/()]))",
    re.ASCII,
)
_BAD_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*")
_ASCII_SPACE = " \t\r\n\f\v"
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


_ALLOWED_NODES = (ast.BinOp, ast.UnaryOp, ast.Load, *_BINARY, *_UNARY)


class FormulaError(ValueError):
    """A formula outside the whitelist, or one that cannot be evaluated."""


@dataclass(frozen=True)
class Formula:
    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, values: Mapping[str, float | None]) -> float:
        """Evaluate with `values` for every name; a missing or null input raises FormulaError."""
        result = _eval(self.tree, values)
        if not math.isfinite(result):
            raise FormulaError(f"{self.text!r} evaluates to {result}, expected a finite number")
        return result


def parse_formula(text: str) -> Formula:
    """Parse `text` against the whitelist grammar, or raise FormulaError."""
    if len(text) > MAX_FORMULA_LENGTH:
        raise FormulaError(
            f"expected a formula of at most {MAX_FORMULA_LENGTH} characters, got {len(text)}"
        )
    _check_tokens(text)
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise FormulaError(f"expected an arithmetic expression, got {text!r} ({exc.msg})") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise FormulaError(f"expected a quantity id, got {node.id!r}")
            names.add(node.id)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise FormulaError(f"expected a number, got {node.value!r}")
        elif not isinstance(node, _ALLOWED_NODES):
            raise FormulaError(
                f"expected only numbers, quantity ids, + - * / ** and parentheses, got "
                f"{type(node).__name__} in {text!r}"
            )
    return Formula(text=text, tree=tree, names=frozenset(names))


def _check_tokens(text: str) -> None:
    """Raise FormulaError unless `text` is ASCII ids, plain decimal numbers, operators, brackets."""
    pos, end = 0, len(text.rstrip(_ASCII_SPACE))
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None:
            start = len(text) - len(text[pos:].lstrip(_ASCII_SPACE))
            bad = _BAD_NUMBER.match(text, start)
            if bad is not None:
                raise FormulaError(
                    f"expected a plain decimal number, got {bad.group()[:40]!r} in a formula"
                )
            raise FormulaError(
                f"unexpected {text[start]!r} (U+{ord(text[start]):04X}) at character {start + 1}: "
                "a formula holds only ASCII quantity ids, plain decimal numbers, + - * / ** and "
                "parentheses"
            )
        number = match.group("number")
        if number is not None and len(number) > budget.MAX_NUMBER_CHARS:
            raise FormulaError(
                f"a number of {len(number)} characters in a formula; "
                f"at most {budget.MAX_NUMBER_CHARS}"
            )
        pos = match.end()


def _eval(node: ast.expr, values: Mapping[str, float | None]) -> float:
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        value = values.get(node.id)
        if value is None:
            raise FormulaError(f"{node.id} has no value")
        return float(value)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_eval(node.operand, values))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, values), _eval(node.right, values)
        if isinstance(node.op, ast.Div) and right == 0:
            raise FormulaError("division by zero")
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise FormulaError(f"exponent {right} is out of range (|exponent| <= 64)")
        try:
            result = _BINARY[type(node.op)](left, right)
        except (OverflowError, ZeroDivisionError, ValueError) as exc:
            raise FormulaError(str(exc)) from None
        # a negative base to a fractional power is complex in Python: not a hardware quantity
        if isinstance(result, complex):
            raise FormulaError(f"{left} ** {right} is not a real number")
        return result
    raise FormulaError(f"unexpected {type(node).__name__}")
