"""`flopkb extract` proposes only verbatim spans and figures the prose already quotes."""

from __future__ import annotations

import re

import pytest

from flopkb.extract import lift_magnitudes, propose, reproduction, sentences
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.magnitude import parse_magnitude
from flopkb.paths import bundled_root
from flopkb.text import normalise


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    loaded, _ = load_kb(bundled_root())
    return loaded


def test_every_proposed_effect_passes_rule_1(kb: KnowledgeBase) -> None:
    """What FKB201 checks, on the raw prose of every bundled record: nothing extract proposes
    could be refused as not verbatim."""
    proposed = 0
    for record_id, record in sorted(kb.classes.items()):
        prose = normalise(record.prose)
        for candidate in propose(record):
            proposed += 1
            assert normalise(candidate.effect) in prose, f"{record_id}: {candidate.effect!r}"
    assert proposed


def test_every_proposed_figure_is_in_its_effect(kb: KnowledgeBase) -> None:
    for record in kb.classes.values():
        for candidate in propose(record):
            parsed = parse_magnitude(candidate.magnitude)
            for figure in parsed.figures:
                assert re.search(rf"(?<![\d.]){re.escape(figure)}(?!\d)", candidate.effect)
            assert candidate.as_row()["basis"] == "unverified"


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("SSD is 2-8x faster than the scan.", ["2-8x"]),
        (
            "SSD crosses FlashAttention-2 at sequence length 2K and is 6x faster at sequence "
            "length 16K.",
            ["crossover at 2K", "6x at 16K"],
        ),
        ("It needs about 20% less compute.", ["~20%"]),
        ("Models are up to 3x faster.", ["up to 3x"]),
        ("The chunk size is Q = 64.", ["Q=64"]),
        ("KDA and MLA at a 3:1 ratio.", ["3:1"]),
        ("A matrix of shape M x K and 2 x 3 tiles.", []),
        ("faster than FlashAttention-2 beyond sequence length 2K", ["crossover at 2K"]),
    ],
)
def test_lift_magnitudes(sentence: str, expected: list[str]) -> None:
    assert lift_magnitudes(sentence) == expected


def test_sentences_keep_section_numbers_together() -> None:
    prose = "It is fast (Dao and Gu 2024, Sec. 9.3, Fig. 10). Next one."
    assert sentences(prose) == ["It is fast (Dao and Gu 2024, Sec. 9.3, Fig. 10).", "Next one."]
    assert all(s in normalise(prose) for s in sentences(prose))


def test_reproduces_most_bundled_rows(kb: KnowledgeBase) -> None:
    result = reproduction(kb)
    assert result["total"] == sum(1 for _ in kb.claims())
    # docs/kb.md reports the figure; most rows must come back
    assert result["reproduced"] / result["total"] >= 0.85, result["missed"]
