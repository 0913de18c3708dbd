"""Text normalisation shared by provenance rule 1 and `flopkb extract`: one notion of "verbatim";
and the one plain-number form figures print in (`plain_g`)."""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from dataclasses import dataclass
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


# what surrounds a word without being part of it: quotes, brackets, sentence punctuation
_EDGE_PUNCTUATION = "\"'()[]{}<>,;:.!?"
# how far past a candidate window the alignment may look for the span's true ends
_SPAN_MARGIN = 3


def _key(word: str) -> str:
    """A word as the closest-span search compares it: without edge punctuation, lowercase."""
    return word.strip(_EDGE_PUNCTUATION).lower()


def _trimmed(words: list[str]) -> str:
    """The span as text, without the opening quote of its first word or the comma, full stop or
    closing quote of its last: still a verbatim span of the prose."""
    text = " ".join(words)
    return text.lstrip(_EDGE_PUNCTUATION).rstrip(_EDGE_PUNCTUATION) or text


def closest_span(prose: str, effect: str, words: list[str] | None = None) -> str | None:
    """The span of `prose` (by words) most similar to `effect`, for the FKB201 hint; or None.

    The span runs from the first to the last prose word that lines up with a word of the effect
    (difflib's matching blocks, words compared without edge punctuation and case), so it neither
    starts a word early nor stops a word short: '2-8x quicker than the fused scan' against
    '... SSD is "2-8x faster than Mamba's fused associative scan" at ...' gives
    '2-8x faster than Mamba's fused associative scan'.

    Bounded work, whatever the record holds: no hint for an effect longer than
    `budget.HINT_MAX_EFFECT_CHARS`; windows of the effect's width are ranked by how many of its
    words they hold (prefix sums: one pass over the prose), and only the
    `budget.HINT_MAX_CANDIDATES` best, widened by a few words each side, are aligned with difflib,
    word by word (characters cost 45 ms a comparison at 600 characters). Comparing every window by
    characters, as before, took minutes on a 49 KB record. `words` is `prose.split(" ")`, when the
    caller has it.
    """
    if not effect or len(effect) > budget.HINT_MAX_EFFECT_CHARS:
        return None
    if words is None:
        words = prose.split(" ")
    effect_keys = [_key(w) for w in effect.split(" ")]
    wanted = set(effect_keys)
    width = len(effect_keys)
    span = min(width, len(words))
    edges = _EDGE_PUNCTUATION
    # one pass over the prose, inlined: this is the hint's only cost linear in the prose
    prefix = [0, *accumulate(w.strip(edges).lower() in wanted for w in words)]
    shared = [prefix[start + span] - prefix[start] for start in range(len(words) - span + 1)]
    # the most shared words first; among equals the earliest (nlargest is stable)
    starts = heapq.nlargest(budget.HINT_MAX_CANDIDATES, range(len(shared)), key=shared.__getitem__)
    best: tuple[int, int] | None = None
    best_ratio = -1.0
    matcher: SequenceMatcher[str] = SequenceMatcher(autojunk=False)
    matcher.set_seq2(effect_keys)
    for start in starts:
        lo = max(0, start - _SPAN_MARGIN)
        window = [_key(w) for w in words[lo : start + span + _SPAN_MARGIN]]
        matcher.set_seq1(window)
        blocks = [b for b in matcher.get_matching_blocks() if b.size]
        if not blocks:
            continue
        first, last = lo + blocks[0].a, lo + blocks[-1].a + blocks[-1].size
        matcher.set_seq1([_key(w) for w in words[first:last]])
        ratio = matcher.ratio()
        # a better alignment wins; among equals the shorter span, then the earliest
        if ratio > best_ratio or (
            ratio == best_ratio and best is not None and last - first < best[1] - best[0]
        ):
            best, best_ratio = (first, last), ratio
    if best is None:
        return None
    text = _trimmed(words[best[0] : best[1]])
    return text if len(text) <= _SPAN_HINT_MAX else text[: _SPAN_HINT_MAX - 3] + "..."


def plain_g(x: float, digits: int) -> str:
    """`digits` significant digits, never in exponent form for 10**digits - 0.5 <= |x| < 1e9
    (19600 tokens, not 1.96e+04; 999.5 -> 1000)."""
    if 10**digits - 0.5 <= abs(x) < 1e9:
        places = digits - len(str(int(abs(x))))
        return str(int(round(x, places))) if places <= 0 else f"{x:.{places}f}"
    return f"{x:.{digits}g}"


# A label's line break: records keep every label on one line (a control character in a record is
# FKB118); a picture draws a label over several lines where its parts are joined by this.
LABEL_BREAK = " · "


def plain(value: float) -> str:
    """A picture's tick or bar label without exponents: 512, 1K, 16K, 16M (binary for multiples
    of 1024), 10k, 0.5, 2.5 (here, not in flopkb.verify.plots, so a hook's picture description
    can use it without validate importing the run)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    if value >= 1024 and float(value).is_integer() and int(value) % 1024 == 0:
        for suffix in ("K", "M", "G", "T"):
            value /= 1024
            if value < 1024 or not float(value).is_integer() or int(value) % 1024:
                return f"{value:g}{suffix}"
    if abs(value) >= 10_000:
        for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
            if abs(value) >= scale:
                return f"{value / scale:.3g}{suffix}"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4g}" if abs(value) >= 1 else f"{value:.3g}"


# A figure is written in ASCII digits, as the formula grammar reads numbers (`re.ASCII`):
# Python's `\d`, `int()` and `float()` also take every other script's decimal digits (a Bengali
# four, U+09EA, is 4 and looks like 8; mathematical bold and fullwidth digits), so a reviewer
# would read one figure and the checks another. `[^\D0-9]`: a decimal digit (Unicode category
# Nd) that is not 0-9.
_FOREIGN_DIGIT = re.compile(r"[^\D0-9]")
# how far around a foreign digit its figure is shown (a run of digits, separators and a unit)
_FIGURE_REACH = 24
_FIGURE_CHARS = frozenset(".,-")


@dataclass(frozen=True)
class ForeignDigits:
    """The first non-ASCII digit of a text: `figure` as written around it, `ascii` its reading
    in ASCII digits, `position` its index in the text, `count` how many such digits it holds."""

    char: str
    figure: str
    ascii: str
    position: int
    count: int

    def describe(self) -> str:
        """`U+09EA BENGALI DIGIT FOUR (and 2 more)`."""
        more = f" (and {self.count - 1} more)" if self.count > 1 else ""
        return f"U+{ord(self.char):04X} {unicodedata.name(self.char, 'DIGIT')}{more}"


def ascii_digits(text: str) -> str:
    """`text` with every decimal digit written as its ASCII digit: '১২৮' -> '128'."""
    return _FOREIGN_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)


def foreign_digits(text: str) -> ForeignDigits | None:
    """The first decimal digit of `text` that is not ASCII 0-9, with the figure around it; None
    when every digit is ASCII (one C-speed pass, and none at all for an ASCII text)."""
    if text.isascii():
        return None
    first = _FOREIGN_DIGIT.search(text)
    if first is None:
        return None
    start = end = first.start()
    low = max(0, start - _FIGURE_REACH)
    while start > low and (text[start - 1].isdigit() or text[start - 1] in _FIGURE_CHARS):
        start -= 1
    high = min(len(text), end + _FIGURE_REACH)
    while end < high and (text[end].isdigit() or text[end] in _FIGURE_CHARS):
        end += 1
    # the unit or suffix written right after the figure ("x", "%", "K")
    while end < high and text[end].isalpha() and end - first.end() < 4:
        end += 1
    figure = text[start:end].strip(".,-")
    count = sum(1 for _ in _FOREIGN_DIGIT.finditer(text))
    return ForeignDigits(first.group(), figure, ascii_digits(figure), first.start(), count)
