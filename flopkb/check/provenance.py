"""Provenance rules 1, 2, 3 and 5 of DESIGN: the claim rows of class records earn what they say.

1. `effect` is a verbatim span of the prose (whitespace, typographic quotes and dashes normalised).
2. Every figure of `magnitude` is a number the prose already quotes, as a number token ("8" matches
   "8" or "8x", never the 8 inside "128"); a size such as `16K` must appear as `16K` (or `16k`).
3. `basis` is earned: unverified (nothing behind it), cited (source + locator), derived (a formula
   that evaluates on every affected accelerator), measured (confirmed evidence on one of them).
5. `magnitude` parses in the grammar of `flopkb.magnitude`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property

from flopkb import budget
from flopkb.check.base import CheckContext, check, rule
from flopkb.check.formulas import (
    BAD_FORMULA,
    NOT_A_QUANTITY,
    MissingInput,
    NotApplicable,
    parsed,
    values_of,
)
from flopkb.findings import Finding, Severity
from flopkb.formula import FormulaError
from flopkb.kb import KnowledgeBase
from flopkb.magnitude import MagnitudeError, parse_magnitude
from flopkb.model import Basis, ClassRecord
from flopkb.text import closest_span, normalise

NOT_VERBATIM = rule(
    "FKB201", Severity.error, "`effect` is not a verbatim span of the record's prose"
)
NEW_FIGURE = rule("FKB202", Severity.error, "`magnitude` has a figure the prose never quotes")
BAD_MAGNITUDE = rule(
    "FKB203", Severity.error, "`magnitude` does not parse in the magnitude grammar"
)
DRESSED_UP = rule("FKB204", Severity.error, "an `unverified` row carries a source or a formula")
CITED_NO_SOURCE = rule("FKB205", Severity.error, "a `cited` row has no `source`")
CITED_NO_LOCATOR = rule("FKB206", Severity.error, "a `cited` row's source has no locator")
DERIVED_NO_FORMULA = rule("FKB207", Severity.error, "a `derived` row has no `formula`")
DERIVED_FAILS = rule(
    "FKB208",
    Severity.error,
    "a `derived` row's formula does not evaluate on an affected accelerator",
)
MEASURED_NO_EVIDENCE = rule(
    "FKB209", Severity.error,
    "a `measured` row has no confirmed evidence on an accelerator in affected_by_hardware",
)  # fmt: skip
DUPLICATE_ROW = rule("FKB210", Severity.error, "two claim rows of one record share an id")
UNDERSTATED = rule(
    "FKB211",
    Severity.warning,
    "an `unverified` row has confirmed evidence: its basis could be `measured`",
)
NOTHING_TO_EVALUATE = rule(
    "FKB212",
    Severity.warning,
    "a `derived` row's record lists no affected accelerator to evaluate on",
)

_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")


def _cut(text: str, limit: int = 200) -> str:
    """`repr(text)` cut to `limit` characters: a message never echoes a whole paragraph."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def number_tokens(text: str) -> set[str]:
    """Standalone numbers of `text`: "128" gives {"128"}, never "8"; "2-8x" gives {"2", "8"}."""
    return set(_NUMBER.findall(text))


def has_size(text: str, size: str) -> bool:
    """Whether `text` quotes the size `16K` as `16K` or `16k` (a number token with its suffix)."""
    number, suffix = size[:-1], size[-1:]
    if not suffix.isalpha():
        return size in number_tokens(text)
    pattern = rf"(?<![\d.]){re.escape(number)}\s?[{suffix.lower()}{suffix.upper()}](?![A-Za-z0-9])"
    return re.search(pattern, text) is not None


def _confirmed_on(kb: KnowledgeBase) -> dict[str, set[str]]:
    """claim id -> accelerators whose pooled verdict (all trusted, fresh runs: a refutation
    beside a confirmation makes it `disagreeing`; an error does not count) is `confirmed`.
    Evidence whose conditions say `simulation: true` (one part standing in for others) never
    counts."""
    from flopkb.verify.pooled import pooled

    out: dict[str, set[str]] = {}
    real = pooled(kb, keep=lambda ev: ev.conditions.get("simulation") is not True)
    for (claim, acc), p in real.items():
        if acc != "unknown-gpu" and p.verdict == "confirmed":
            out.setdefault(claim, set()).add(acc)
    return out


@check
def provenance(ctx: CheckContext) -> Iterator[Finding]:
    """Rules 1, 2, 3 and 5 over every claim row of every class record."""
    confirmed = _confirmed_on(ctx.kb)
    for rid, record in sorted(ctx.kb.classes.items()):
        if record.flop.hardware_parameters:
            yield from ctx.isolated(rid, _record(ctx, rid, record, confirmed))


def _record(
    ctx: CheckContext, rid: str, record: ClassRecord, confirmed: dict[str, set[str]]
) -> Iterator[Finding]:
    prose = _Prose(normalise(record.prose))
    hints_left: int | None = None
    seen: dict[str, int] = {}
    for i, row in enumerate(record.flop.hardware_parameters):
        at = ("flop", "hardware_parameters", i)
        if row.id in seen:
            yield ctx.finding(
                DUPLICATE_ROW,
                rid,
                (*at, "id"),
                f"row id {row.id!r} also used by row {seen[row.id]}",
            )
        seen.setdefault(row.id, i)
        effect = normalise(row.effect)
        if effect not in prose.text:
            if hints_left is None:
                # the hints of one record scan its prose at most this many times in all (a 1 MiB
                # record of 100 non-verbatim rows would otherwise scan 150,000 words 100 times)
                hints_left = max(1, budget.HINT_WORDS_PER_RECORD // max(1, len(prose.words)))
            span = closest_span(prose.text, effect, prose.words) if hints_left > 0 else None
            hints_left -= 1
            yield ctx.finding(
                NOT_VERBATIM, rid, (*at, "effect"),
                f"effect {_cut(row.effect)} is not in the prose",
                f"closest span of the prose: {span!r}" if span is not None else None,
            )  # fmt: skip
        yield from _magnitude(ctx, rid, at, row.magnitude, prose)
        yield from _basis(ctx, rid, record, i, confirmed.get(f"{rid}/{row.id}", set()))


class _Prose:
    """A record's normalised prose, with its words and number tokens computed when first asked
    (most rows are verbatim and many magnitudes are qualitative: neither is needed then)."""

    def __init__(self, text: str) -> None:
        self.text = text

    @cached_property
    def words(self) -> list[str]:
        return self.text.split(" ")

    @cached_property
    def tokens(self) -> set[str]:
        return number_tokens(self.text)


def _magnitude(
    ctx: CheckContext, rid: str, at: tuple[str | int, ...], text: str, prose: _Prose
) -> Iterator[Finding]:
    try:
        magnitude = parse_magnitude(text)
    except MagnitudeError as exc:
        yield ctx.finding(
            BAD_MAGNITUDE, rid, (*at, "magnitude"), str(exc), "see the magnitude grammar in README"
        )
        return
    sizes = [str(t) for key in ("at_text",) if (t := magnitude.condition.get(key))]
    size_numbers = {s[:-1] for s in sizes if s[-1:].isalpha()}
    for figure in magnitude.figures:
        if figure in size_numbers:
            continue
        if figure not in prose.tokens:
            yield ctx.finding(
                NEW_FIGURE, rid, (*at, "magnitude"),
                f"figure {figure} of magnitude {text!r} is not quoted in the prose",
                "a row reproduces figures the prose quotes; measured values belong in evidence",
            )  # fmt: skip
    for size in sizes:
        if not has_size(prose.text, size):
            yield ctx.finding(
                NEW_FIGURE, rid, (*at, "magnitude"),
                f"size {size} of magnitude {text!r} is not quoted in the prose",
            )  # fmt: skip


def _basis(
    ctx: CheckContext, rid: str, record: ClassRecord, i: int, confirmed_on: set[str]
) -> Iterator[Finding]:
    row = record.flop.hardware_parameters[i]
    at = ("flop", "hardware_parameters", i)
    claim = f"{rid}/{row.id}"
    if row.basis is Basis.unverified:
        for name in ("source", "formula"):
            if getattr(row, name) is not None:
                yield ctx.finding(
                    DRESSED_UP, rid, (*at, name), f"an unverified row must not carry a {name}",
                    "drop it, or set the basis it earns (cited, derived)",
                )  # fmt: skip
        if confirmed_on:
            yield ctx.finding(
                UNDERSTATED, rid, (*at, "basis"),
                f"{claim} has confirmed evidence on {', '.join(sorted(confirmed_on))}",
                "set basis: measured",
            )  # fmt: skip
    elif row.basis is Basis.cited:
        if row.source is None:
            yield ctx.finding(
                CITED_NO_SOURCE, rid, (*at, "basis"), "a cited row needs `source: {id, locator}`"
            )
        elif not (row.source.locator or "").strip():
            yield ctx.finding(
                CITED_NO_LOCATOR, rid, (*at, "source"), f"source {row.source.id!r} has no locator",
                "say where in the source: section, figure, table or page",
            )  # fmt: skip
    elif row.basis is Basis.derived:
        yield from _derived(ctx, rid, record, i)
    elif row.basis is Basis.measured:
        affected = set(record.affected_by_hardware)
        if not confirmed_on & affected:
            yield ctx.finding(
                MEASURED_NO_EVIDENCE, rid, (*at, "basis"),
                f"no confirmed evidence for {claim} on an accelerator in affected_by_hardware",
                "run `flopkb verify --claim " + claim + "`, or set the basis the row earns",
            )  # fmt: skip


def _derived(ctx: CheckContext, rid: str, record: ClassRecord, i: int) -> Iterator[Finding]:
    row = record.flop.hardware_parameters[i]
    at = ("flop", "hardware_parameters", i)
    if row.formula is None or not row.formula.strip():
        yield ctx.finding(
            DERIVED_NO_FORMULA,
            rid,
            (*at, "basis"),
            "a derived row needs a `formula` over quantities",
        )
        return
    # rows of many records share formulas: parse each text once per run
    parsed_memo = ctx.shared.setdefault("row_formulas", {})
    if row.formula not in parsed_memo:
        parsed_memo[row.formula] = parsed(row.formula)
    formula = parsed_memo[row.formula]
    if isinstance(formula, FormulaError):
        yield ctx.finding(BAD_FORMULA, rid, (*at, "formula"), str(formula))
        return
    unknown = sorted(
        n for n in formula.names if n not in ctx.kb.quantities and n not in ctx.kb.unloaded
    )
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        yield ctx.finding(NOT_A_QUANTITY, rid, (*at, "formula"), f"{names}: not a quantity record")
        return
    if not record.affected_by_hardware:
        yield ctx.finding(
            NOTHING_TO_EVALUATE, rid, (*at, "formula"), "no affected accelerator to evaluate on"
        )
        return
    values = values_of(ctx)
    accelerators = ctx.kb.accelerators
    # (formula, accelerator) -> the error evaluating it there, or None: evaluated once per run
    outcomes: dict[tuple[str, str], Exception | None] = ctx.shared.setdefault("row_values", {})
    for acc_id in record.affected_by_hardware:
        acc = accelerators.get(acc_id)
        if acc is None:
            continue  # an unresolved reference is FKB301's finding
        key = (formula.text, acc_id)
        if key not in outcomes:
            try:
                values.evaluate(formula, acc)
                outcomes[key] = None
            except FormulaError as exc:
                outcomes[key] = exc
        outcome = outcomes[key]
        if outcome is None or isinstance(outcome, NotApplicable):
            # an explicit null: the claim is not applicable there (DESIGN), not a broken formula
            continue
        if isinstance(outcome, MissingInput):
            yield ctx.finding(
                DERIVED_FAILS, rid, (*at, "formula"), f"does not evaluate on {acc_id}: {outcome}"
            )
        else:
            yield ctx.finding(
                DERIVED_FAILS, rid, (*at, "formula"), f"fails on {acc_id}: {outcome}"
            )
