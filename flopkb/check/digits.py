"""FKB214: a figure the provenance rules read, written in digits other than ASCII 0-9.

Python reads every script's decimal digits as numbers (`float()` of a Bengali four, U+09EA, is
4.0, and it looks like an 8), so a record could show a reviewer one figure while the checks and
the experiments read another. The formula and magnitude grammars take ASCII digits only (a magnitude
with other digits is FKB203); this rule covers the rest of what rule 2 and verify read: the prose
whose numbers a magnitude must quote, and a claim row's `conditions` (an experiment runs at
`head_dim` in Bengali digits as at 128). The hint gives the ASCII reading.
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.grammar.text import ForeignDigits, foreign_digits
from flopkb.model import ClassRecord


def _finding(
    ctx: CheckContext, rid: str, path: tuple[str | int, ...], what: str, found: ForeignDigits
) -> Finding:
    return ctx.finding(
        "FKB214", rid, path,
        f"{what}: figure {found.figure!r} is written with {found.describe()}; flopkb reads "
        "figures in ASCII digits only",
        f"it reads as {found.ascii!r}: write that, in ASCII digits",
    )  # fmt: skip


@check
def foreign_digit_figures(ctx: CheckContext) -> Iterator[Finding]:
    for rid, record in sorted(ctx.kb.classes.items()):
        yield from ctx.isolated(rid, _record(ctx, rid, record))


def _record(ctx: CheckContext, rid: str, record: ClassRecord) -> Iterator[Finding]:
    found = foreign_digits(record.prose)
    if found is not None:
        line = record.prose.count("\n", 0, found.position) + 1
        yield _finding(ctx, rid, ("prose",), f"prose (its line {line})", found)
    for i, row in enumerate(record.flop.hardware_parameters):
        for key, value in row.conditions.items():
            at = ("flop", "hardware_parameters", i, "conditions", key)
            for text in (key, value):
                hit = foreign_digits(text) if isinstance(text, str) else None
                if hit is not None:
                    yield _finding(ctx, rid, at, f"conditions {key!r}", hit)
                    break
