"""Text normalisation shared by provenance rule 1 and `flopkb extract`: one notion of "verbatim"."""

from __future__ import annotations

import heapq
from difflib import SequenceMatcher
from itertools import accumulate

from flopkb import budget

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "\u202f": " ", "\u00d7": "x",
    }
)  # fmt: skip


def normalise(text: str) -> str:
    """Typographic quotes, dashes, no-break spaces and the times sign folded; spaces squeezed.

    `str.split()` splits on exactly the characters regex `\\s` matches in a str, at a third of
    the cost of `re.sub` (this runs on every prose and effect of the KB).
    """
    return " ".join(text.translate(_TRANSLATE).split())


_SPAN_HINT_MAX = 160


def closest_span(prose: str, effect: str, words: list[str] | None = None) -> str | None:
    """The span of `prose` (by words) most similar to `effect`, for the FKB201 hint; or None.

    Bounded work, whatever the record holds: no hint for an effect longer than
    `budget.HINT_MAX_EFFECT_CHARS`; windows of the effect's width are ranked by how many of its
    words they hold (prefix sums: one pass over the prose), and only the
    `budget.HINT_MAX_CANDIDATES` best are compared with difflib, word by word (characters cost
    45 ms a comparison at 600 characters). Comparing every window by characters, as before,
    took minutes on a 49 KB record. `words` is `prose.split(" ")`, when the caller has it.
    """
    if not effect or len(effect) > budget.HINT_MAX_EFFECT_CHARS:
        return None
    if words is None:
        words = prose.split(" ")
    effect_words = effect.split(" ")
    wanted = set(effect_words)
    width = len(effect_words)
    span = min(width, len(words))
    prefix = [0, *accumulate(map(wanted.__contains__, words))]
    shared = [prefix[start + span] - prefix[start] for start in range(len(words) - span + 1)]
    # the most shared words first; among equals the earliest (nlargest is stable)
    starts = heapq.nlargest(budget.HINT_MAX_CANDIDATES, range(len(shared)), key=shared.__getitem__)
    best, best_ratio = "", -1.0
    matcher: SequenceMatcher[str] = SequenceMatcher(autojunk=False)
    matcher.set_seq2(effect_words)
    for size in sorted({max(1, width - 2), width, width + 2}):
        for start in starts:
            candidate = words[start : start + size]
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
                continue
            ratio = matcher.ratio()
            if ratio > best_ratio:
                best, best_ratio = " ".join(candidate), ratio
    return best if len(best) <= _SPAN_HINT_MAX else best[: _SPAN_HINT_MAX - 3] + "..."
