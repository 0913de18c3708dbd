"""How generated pages write numbers, tables and paragraphs, so every block reads alike."""

from __future__ import annotations

import textwrap

WIDTH = 100


def size(n: float) -> str:
    """Sequence lengths and element counts as the docs write them: 512, 1K, 16K, 16M."""
    n = int(n)
    for suffix, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


def g3(x: float) -> str:
    """Three significant figures, trailing zeros kept (12.0, 3.00), never in exponent form."""
    text = f"{x:#.3g}".rstrip(".")
    return f"{x:.0f}" if "e" in text else text


def x1(x: float) -> str:
    """A ratio at another sweep point, as the tables write them: 6.2x, 1.04x near parity."""
    return f"{x:.2f}x" if x < 1.5 else f"{x:.1f}x"


def band(lo: float, hi: float) -> str:
    return f"[{g3(lo)}, {g3(hi)}]"


def slash(values: list[float], fmt: str) -> str:
    """Figures at several shapes in one cell: `0.81 / 2.24 / 1.29`."""
    return " / ".join(format(v, fmt) for v in values)


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def paragraph(text: str) -> str:
    """One paragraph wrapped at WIDTH; words are never split (ids and paths stay whole)."""
    return textwrap.fill(text.replace("\n", " "), width=WIDTH, break_on_hyphens=False,
                         break_long_words=False) + "\n"


def ids(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)
