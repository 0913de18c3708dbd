"""The provenance rules: the claim rows of class records earn what they say (docs/validate.md,
"How the provenance rules are read").

1. `effect` is a verbatim span of the prose (whitespace, typographic quotes and dashes normalised).
2. Every figure of `magnitude` is a number the prose already quotes, as a number token ("8" matches
   "8" or "8x", never the 8 inside "128"); a size such as `16K` must appear as `16K` (or `16k`).
3. `basis` is earned: unverified (nothing behind it), cited (source + locator), derived (a formula
   that evaluates on every affected accelerator), measured (confirmed evidence on one of them).
5. `magnitude` parses in the grammar of `flopkb.grammar.magnitude`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property

from flopkb import budget
from flopkb.check.base import CheckContext, check
from flopkb.check.formulas import MissingInput, NotApplicable, parsed, values_of
from flopkb.check.references import unloaded_reference
from flopkb.evidence.pooled import pooled
from flopkb.findings import Finding
from flopkb.grammar.formula import FormulaError
from flopkb.grammar.magnitude import MagnitudeError, parse_magnitude
from flopkb.grammar.text import closest_span, normalise
from flopkb.hardware.derived import judge, quantity_unit
from flopkb.kb import KnowledgeBase
from flopkb.model import Basis, ClassRecord

_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")
# a figure with thousands separators ("1,979 TOPS") is also a token, as written
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")


def _cut(text: str, limit: int = 200) -> str:
    """`repr(text)` cut to `limit` characters: a message never echoes a whole paragraph."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def number_tokens(text: str) -> set[str]:
    """Standalone numbers of `text`: "128" gives {"128"}, never "8"; "2-8x" gives {"2", "8"};
    "1,979" gives {"1,979", "1", "979"} (the grouped figure as written, and its parts as before)."""
    return set(_NUMBER.findall(text)) | set(_GROUPED.findall(text))


_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s?([A-Za-z])(?![A-Za-z0-9])")


def size_tokens(text: str) -> set[str]:
    """Sizes `text` quotes, a number token with a one-letter suffix, folded: "16K" and "16 k"
    both give "16k" (one pass over the text, so a record's rows never rescan its prose)."""
    return {number + suffix.lower() for number, suffix in _SIZE.findall(text)}


def has_size(text: str, size: str) -> bool:
    """Whether `text` quotes the size `16K` as `16K` or `16k` (a number token with its suffix)."""
    return _quotes_size(number_tokens(text), size_tokens(text), size)


def _quotes_size(numbers: set[str], sizes: set[str], size: str) -> bool:
    number, suffix = size[:-1], size[-1:]
    if not suffix.isalpha():
        return size in numbers
    return number + suffix.lower() in sizes


def _confirmed_on(kb: KnowledgeBase) -> dict[str, set[str]]:
    """claim id -> accelerators whose pooled verdict (all trusted, fresh runs: a refutation
    beside a confirmation makes it `disagreeing`; an error does not count) is `confirmed`.
    Evidence whose conditions say `simulation: true` (one part standing in for others) never
    counts."""
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
                "FKB210",
                rid,
                (*at, "id"),
                f"row id {row.id!r} also used by row {seen[row.id]}",
            )
        seen.setdefault(row.id, i)
        effect = normalise(row.effect)
        if not prose.contains(effect):
            if hints_left is None:
                # the hints of one record scan its prose at most this many times in all (a 1 MiB
                # record of 100 non-verbatim rows would otherwise scan 150,000 words 100 times)
                hints_left = max(1, budget.HINT_WORDS_PER_RECORD // max(1, len(prose.words)))
            span = closest_span(prose.text, effect, prose.words) if hints_left > 0 else None
            hints_left -= 1
            yield ctx.finding(
                "FKB201", rid, (*at, "effect"),
                f"effect {_cut(row.effect)} is not in the prose",
                f"closest span of the prose: {span!r}" if span is not None else None,
            )  # fmt: skip
        yield from _magnitude(ctx, rid, at, row.magnitude, prose)
        yield from _basis(ctx, rid, record, i, confirmed.get(f"{rid}/{row.id}", set()))


class _Prose:
    """A record's normalised prose, with its words, number tokens and sizes computed when first
    asked, once per record (most rows are verbatim and many magnitudes are qualitative: none is
    needed then; a record of thousands of `6x at 2048` rows over long prose needs them once)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._spans: dict[str, bool] = {}

    @cached_property
    def word_set(self) -> set[str]:
        return set(self.words)

    def contains(self, effect: str) -> bool:
        """Whether `effect` is a span of the prose. Each distinct effect is looked up once, and
        one whose inner words the prose never uses is refused without a scan (a scan of a 512 KiB
        prose per row made thousands of rows cost seconds)."""
        found = self._spans.get(effect)
        if found is None:
            inner = effect.split(" ")[1:-1]
            found = all(w in self.word_set for w in inner) and effect in self.text
            self._spans[effect] = found
        return found

    @cached_property
    def words(self) -> list[str]:
        return self.text.split(" ")

    @cached_property
    def tokens(self) -> set[str]:
        return number_tokens(self.text)

    @cached_property
    def sizes(self) -> set[str]:
        return size_tokens(self.text)

    def quotes_size(self, size: str) -> bool:
        return _quotes_size(self.tokens, self.sizes, size)


def _magnitude(
    ctx: CheckContext, rid: str, at: tuple[str | int, ...], text: str, prose: _Prose
) -> Iterator[Finding]:
    try:
        magnitude = parse_magnitude(text)
    except MagnitudeError as exc:
        yield ctx.finding(
            "FKB203", rid, (*at, "magnitude"), str(exc),
            exc.hint or "see docs/validate.md#the-magnitude-grammar",
        )  # fmt: skip
        return
    sizes = [str(t) for key in ("at_text",) if (t := magnitude.condition.get(key))]
    size_numbers = {s[:-1] for s in sizes if s[-1:].isalpha()}
    for figure in magnitude.figures:
        if figure in size_numbers:
            continue
        if figure not in prose.tokens:
            yield ctx.finding(
                "FKB202", rid, (*at, "magnitude"),
                f"figure {figure} of magnitude {text!r} is not quoted in the prose",
                "a row reproduces figures the prose quotes; measured values belong in evidence",
            )  # fmt: skip
    for size in sizes:
        if not prose.quotes_size(size):
            yield ctx.finding(
                "FKB202", rid, (*at, "magnitude"),
                f"size {size} of magnitude {text!r} is not quoted in the prose",
            )  # fmt: skip


def _is_absolute(text: str) -> bool:
    try:
        return parse_magnitude(text).kind in {"absolute", "change"}
    except MagnitudeError:
        return False


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
                    "FKB204", rid, (*at, name), f"an unverified row must not carry a {name}",
                    "drop it, or set the basis it earns (cited, derived)",
                )  # fmt: skip
        if confirmed_on:
            yield ctx.finding(
                "FKB211", rid, (*at, "basis"),
                f"{claim} has confirmed evidence on {', '.join(sorted(confirmed_on))}",
                "set basis: measured",
            )  # fmt: skip
    elif row.basis is Basis.cited:
        if row.source is None:
            yield ctx.finding(
                "FKB205", rid, (*at, "basis"), "a cited row needs `source: {id, locator}`"
            )
        elif not (row.source.locator or "").strip():
            yield ctx.finding(
                "FKB206", rid, (*at, "source"), f"source {row.source.id!r} has no locator",
                "say where in the source: section, figure, table or page",
            )  # fmt: skip
    elif row.basis is Basis.derived:
        yield from _derived(ctx, rid, record, i)
    elif row.basis is Basis.measured:
        affected = set(record.affected_by_hardware)
        if not confirmed_on & affected:
            yield ctx.finding(
                "FKB209", rid, (*at, "basis"),
                f"no confirmed evidence for {claim} on an accelerator in affected_by_hardware",
                "run `flopkb verify --claim " + claim + "`, or set the basis the row earns",
            )  # fmt: skip


def _derived(ctx: CheckContext, rid: str, record: ClassRecord, i: int) -> Iterator[Finding]:
    row = record.flop.hardware_parameters[i]
    at = ("flop", "hardware_parameters", i)
    if (row.formula is None or not row.formula.strip()) and row.derived_from is not None:
        return  # computed from architecture records: flopkb.check.architectures checks it
    if row.formula is None or not row.formula.strip():
        yield ctx.finding(
            "FKB207",
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
        yield ctx.finding("FKB401", rid, (*at, "formula"), str(formula))
        return
    for name in sorted(formula.names - ctx.kb.quantities.keys()):
        unloaded = unloaded_reference(ctx, rid, (*at, "formula"), name, "formula")
        if unloaded is not None:
            yield unloaded
    unknown = sorted(
        n for n in formula.names if n not in ctx.kb.quantities and n not in ctx.kb.unloaded
    )
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        yield ctx.finding("FKB402", rid, (*at, "formula"), f"{names}: not a quantity record")
        return
    if not record.affected_by_hardware:
        yield ctx.finding(
            "FKB212", rid, (*at, "formula"), "no affected accelerator to evaluate on"
        )
        return
    values = values_of(ctx)
    accelerators = ctx.kb.accelerators
    # (formula, accelerator) -> its value there, or the error evaluating it: once per run
    outcomes: dict[tuple[str, str], float | Exception] = ctx.shared.setdefault("row_values", {})
    # value -> accelerators where the formula gives it but the magnitude does not cover it
    disagreeing: dict[float, list[str]] = {}
    cover_text = ""
    unit = quantity_unit(values, row)
    for acc_id in record.affected_by_hardware:
        acc = accelerators.get(acc_id)
        if acc is None:
            continue  # an unresolved reference is FKB301's finding
        key = (formula.text, acc_id)
        if key not in outcomes:
            try:
                outcomes[key] = values.evaluate(formula, acc)
            except FormulaError as exc:
                outcomes[key] = exc
        outcome = outcomes[key]
        if isinstance(outcome, float):
            agrees, cover_text = judge(outcome, row.magnitude, unit)
            if agrees is False:
                disagreeing.setdefault(outcome, []).append(acc_id)
        elif isinstance(outcome, NotApplicable):
            # an explicit null: the claim is not applicable there (FKB603), not a broken formula
            continue
        elif isinstance(outcome, MissingInput):
            yield ctx.finding(
                "FKB208", rid, (*at, "formula"), f"does not evaluate on {acc_id}: {outcome}"
            )
        else:
            yield ctx.finding(
                "FKB208", rid, (*at, "formula"), f"fails on {acc_id}: {outcome}"
            )
    if disagreeing:
        # one finding per row, naming each computed value and where: a constant formula gives
        # one value everywhere, a formula over specs one per part
        # an absolute magnitude is compared in the row quantity's unit: say which
        shown_unit = f" {unit}" if unit and _is_absolute(row.magnitude) else ""
        groups = [
            f"{value:.6g}{shown_unit} on {', '.join(accs)}" for value, accs in disagreeing.items()
        ]
        shown = "; ".join(groups[:4]) + (f"; and {len(groups) - 4} more" if len(groups) > 4 else "")
        covered = cover_text if cover_text.startswith(("[", "(")) else None
        yield ctx.finding(
            "FKB213", rid, (*at, "magnitude"),
            f"formula {_cut(formula.text, 80)} computes {shown}; magnitude "
            f"{_cut(row.magnitude, 60)} "
            + (f"covers {covered}{shown_unit}" if covered else f"cannot be compared: {cover_text}"),
            "fix the formula or the magnitude, or set the basis the row earns (cited)",
        )  # fmt: skip
