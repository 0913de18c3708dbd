"""Text normalisation shared by provenance rule 1 and `flopkb extract`: one notion of "verbatim"."""

from __future__ import annotations

import re

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-",
        "\u00a0": " ", "\u202f": " ", "\u00d7": "x",
    }
)  # fmt: skip
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Typographic quotes, dashes, no-break spaces and the times sign folded; spaces squeezed."""
    return _SPACE.sub(" ", text.translate(_TRANSLATE)).strip()
