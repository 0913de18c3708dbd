"""Derived rows are computed (flopkb.hardware.derived): what each magnitude form covers, and
FKB213."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopkb.grammar.magnitude import parse_magnitude
from flopkb.hardware.derived import NoCover, covers, judge
from flopkb.validate import validate

SMALL_KB = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"


@pytest.mark.parametrize(
    ("magnitude", "inside", "outside"),
    [
        ("3x", [2.5, 3.0, 3.4999], [2.4999, 3.5, 2.0]),
        ("92%", [91.5, 92.3077, 92.49], [91.49, 92.5]),
        ("3.73x", [3.725, 3.734], [3.72, 3.735]),
        ("~20%", [17.5, 22.5, 19.0], [17.4, 22.6]),
        ("2-8x", [1.5, 8.49], [1.49, 8.5]),
        ("up to 3x", [0.1, 3.49], [3.5]),
        ("at least 2x", [1.5, 1e9], [1.49]),
        ("3:1", [2.5, 3.49], [3.5, 14.8]),
        ("crossover at 2K", [1536, 2559], [1535, 2560]),
        ("P=128", [127.5, 128.49], [128.5]),
        ("d2=64", [63.5, 64.49], [2.0, 64.5]),
        ("crossover at 0", [0.0, 0.49], [0.5]),
        ("6x at 16K", [5.5, 6.49], [6.5]),
    ],
)
def test_covers_with_the_magnitudes_own_rounding(
    magnitude: str, inside: list[float], outside: list[float]
) -> None:
    cover = covers(parse_magnitude(magnitude))
    assert cover is not None
    assert all(cover.holds(v) for v in inside), cover.text()
    assert not any(cover.holds(v) for v in outside), cover.text()


def test_absolute_reads_the_value_in_the_rows_quantity_unit() -> None:
    mag = parse_magnitude("3.35 TB/s")
    assert covers(mag, "TB/s").holds(3.35)  # type: ignore[union-attr]
    assert covers(mag, "GB/s").holds(3350)  # type: ignore[union-attr]
    assert not covers(mag, "GB/s").holds(3.35)  # type: ignore[union-attr]
    with pytest.raises(NoCover, match="not a unit of byte_rate"):
        covers(mag, "TFLOP/s")
    assert judge(4.0, "from 12 ms to 4 ms", "ms") == (True, "[3.5, 4.5)")


def test_qualitative_has_nothing_to_compare() -> None:
    assert covers(parse_magnitude("qualitative")) is None
    assert judge(1.0, "qualitative", None) == (None, "")


def _small_kb_saying(tmp_path: Path, sentence: str) -> tuple[Path, Path, str]:
    """(KB, its mamba2-ssd record, that record's text with `sentence` added to the prose the
    rows below quote): a copy of the small KB, the text not yet written back."""
    kb = tmp_path / "kb"
    shutil.copytree(SMALL_KB, kb)
    path = kb / "records" / "classes" / "mamba2-ssd.yaml"
    text = path.read_text(encoding="utf-8")
    prose = "follows the BF16 tensor throughput and the ridge point of the part."
    return kb, path, text.replace(prose, f"{prose} {sentence}")


def _kb_with_row(
    tmp_path: Path, magnitude: str, formula: str, prose_figure: str,
    quantity: str = "ridge_point_bf16",
) -> Path:
    kb, path, text = _small_kb_saying(tmp_path, f"It is {prose_figure}.")
    row = "      magnitude: qualitative\n      basis: derived\n      formula: ridge_point_bf16"
    assert row in text
    text = text.replace(
        row, f'      magnitude: "{magnitude}"\n      basis: derived\n      formula: "{formula}"'
    )
    text = text.replace("quantity: ridge_point_bf16", f"quantity: {quantity}")
    path.write_text(text, encoding="utf-8")
    return kb


def test_one_plus_one_is_not_3x(tmp_path: Path) -> None:
    result = validate(_kb_with_row(tmp_path, "3x", "1 + 1", "3x faster"))
    found = [f for f in result.errors if f.rule == "FKB213"]
    assert len(found) == 1
    assert "computes 2 on h100-sxm" in found[0].message and "[2.5, 3.5)" in found[0].message


def test_a_formula_inside_the_rounding_is_clean(tmp_path: Path) -> None:
    result = validate(_kb_with_row(tmp_path, "3x", "1 + 2.4", "3x faster"))
    assert [f for f in result.findings if f.rule == "FKB213"] == []
    assert result.ok


def test_absolute_magnitude_validates_with_its_grouped_figure(tmp_path: Path) -> None:
    # the small KB's bf16_tensor_flops is in FLOP/s: 989.4e12 read against "989.4 TFLOP/s"
    peak = "bf16_tensor_flops"
    kb = _kb_with_row(tmp_path, "989.4 TFLOP/s", peak, "989.4 TFLOP/s", quantity=peak)
    result = validate(kb)
    assert result.ok, [f.message for f in result.errors]
    # rule 2 finds "1,979" as written in the prose; the formula's 989.4e12 is not 1,979 TFLOP/s
    wrong = _kb_with_row(tmp_path / "b", "1,979 TFLOP/s", peak, "1,979 TFLOP/s", quantity=peak)
    errors = validate(wrong).errors
    assert [f.rule for f in errors] == ["FKB213"]
    assert "9.894e+14" in errors[0].message and "[1.9785e+15, 1.9795e+15)" in errors[0].message
    # a row whose quantity is in FLOP/B cannot be read as TFLOP/s: said, not guessed
    ridge = _kb_with_row(tmp_path / "c", "989.4 TFLOP/s", peak, "989.4 TFLOP/s")
    assert "not a unit of flop_rate" in validate(ridge).errors[0].message


def _kb_with_cited_row(tmp_path: Path, magnitude: str, sentence: str) -> Path:
    kb, path, text = _small_kb_saying(tmp_path, sentence)
    row = (
        f'    - id: absolute-figure\n      quantity: bf16_tensor_flops\n'
        f'      effect: "{sentence}"\n      magnitude: "{magnitude}"\n      basis: cited\n'
        f'      source: {{id: dao-gu-2024-ssd, locator: "Table 1"}}\n'
    )
    text = text.replace("history:\n", row + "history:\n", 1)
    path.write_text(text, encoding="utf-8")
    return kb


@pytest.mark.parametrize(
    ("magnitude", "sentence"),
    [
        ("740 TFLOP/s", "The GEMM reaches 740 TFLOP/s in FP16."),
        ("1,979 TOPS", "INT8 peaks at 1,979 TOPS dense."),
        ("from 12 ms to 4 ms", "Fusion cuts a step from 12 ms to 4 ms."),
        ("up to 80 GB", "It holds up to 80 GB of weights."),
    ],
)
def test_cited_absolute_rows_validate(tmp_path: Path, magnitude: str, sentence: str) -> None:
    result = validate(_kb_with_cited_row(tmp_path, magnitude, sentence))
    assert result.ok, [(f.rule, f.message) for f in result.errors]


def test_figures_are_matched_as_written(tmp_path: Path) -> None:
    # "1979" is not the prose's "1,979": rule 2 compares figures as written
    result = validate(_kb_with_cited_row(tmp_path, "1979 TOPS", "INT8 peaks at 1,979 TOPS dense."))
    assert [f.rule for f in result.errors] == ["FKB202"]
