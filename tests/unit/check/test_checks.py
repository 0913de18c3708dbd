"""Rule helpers and the check runner: normalisation, number tokens, closest span, evaluation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopkb.check import load_checks, run_checks
from flopkb.check.base import CHECKS
from flopkb.check.formulas import MissingInput, NotApplicable, QuantityValues
from flopkb.check.provenance import closest_span, has_size, number_tokens
from flopkb.findings import Severity
from flopkb.grammar.formula import FormulaError, parse_formula
from flopkb.grammar.text import normalise
from flopkb.kb import load_kb
from flopkb.rules import RULES
from flopkb.validate import validate
from tests.cli.kbrepo import break_effect

SMALL_KB = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"


def test_normalise_folds_typography_and_whitespace() -> None:
    typographic = "\u201c2\u20138\u00d7  faster\n than Mamba\u2019s\u201d"
    assert normalise(typographic) == '"2-8x faster than Mamba\'s"'


def test_number_tokens_are_standalone() -> None:
    assert number_tokens("state dimension 128, 2-8x, 3.73x and 16K") == {
        "128",
        "2",
        "8",
        "3.73",
        "16",
    }
    assert "8" not in number_tokens("a 128-wide tile")


def test_sizes_need_their_suffix() -> None:
    assert has_size("at sequence length 16K", "16K")
    assert has_size("at 16k tokens", "16K")
    assert not has_size("at 16 tokens", "16K")
    assert not has_size("at 116K", "16K")
    assert has_size("at 2048 tokens", "2048")


def test_closest_span_finds_the_near_miss() -> None:
    prose = normalise("The paper reports SSD is 2-8x faster than the fused scan at state size 64.")
    assert (
        closest_span(prose, "2-8x quicker than the fused scan") == "2-8x faster than the fused scan"
    )


def test_closest_span_starts_and_ends_on_the_words_that_line_up() -> None:
    # the case that started one word early ('is "2-8x') and stopped one short (before 'scan')
    prose = normalise(
        "The paper reports that SSD is \u201c2-8x faster than Mamba\u2019s fused associative "
        "scan\u201d at state dimension 64, and 6x faster than FlashAttention-2 at 16K."
    )
    effect = "2-8x quicker than the fused scan"
    assert closest_span(prose, effect) == "2-8x faster than Mamba's fused associative scan"
    assert closest_span(prose, "6x quicker than FlashAttention-2") == (
        "6x faster than FlashAttention-2"
    )
    # a leading word the prose has is kept, the punctuation around the span is not
    assert closest_span(prose, "SSD is 2-8x faster") == 'SSD is "2-8x faster'
    assert closest_span(prose, "wholly unrelated wording") is None


def test_the_fkb201_hint_quotes_the_exact_span(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(SMALL_KB, kb)
    break_effect(kb)  # the effect "2-8x quicker than the fused scan"
    [finding] = [f for f in validate(kb).findings if f.rule == "FKB201"]
    assert finding.hint == (
        "closest span of the prose: \"2-8x faster than Mamba's fused associative scan\""
    )


def test_every_rule_has_a_summary_and_a_code_in_its_range() -> None:
    load_checks()
    assert CHECKS
    for code, rule in RULES.items():
        assert code.startswith("FKB") and len(code) == 6 and rule.summary
        assert isinstance(rule.severity, Severity)


def test_a_crashing_check_becomes_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    kb, _ = load_kb(SMALL_KB)
    load_checks()

    def broken(ctx):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("flopkb.check.base.CHECKS", [*CHECKS, broken])
    findings = run_checks(kb)
    assert [f.rule for f in findings if f.rule == "FKB199"] == ["FKB199"]
    assert "boom" in next(f.message for f in findings if f.rule == "FKB199")


def test_quantity_values_recurse_and_never_raise_outside_formula_errors() -> None:
    kb, _ = load_kb(SMALL_KB)
    values = QuantityValues(kb)
    acc = kb.accelerators["h100-sxm"]
    assert values.resolve(acc, "ridge_point_bf16") == pytest.approx(989.4e12 / 3.35e12)
    with pytest.raises(MissingInput):
        values.resolve(acc, "no_such_quantity")
    with pytest.raises(FormulaError, match="not a real number"):
        values.evaluate(parse_formula("(0 - hbm_bandwidth) ** 0.5"), acc)


def test_null_spec_is_not_applicable(tmp_path: Path) -> None:
    shutil.copytree(SMALL_KB, tmp_path / "kb")
    acc = tmp_path / "kb/records/accelerators/h100-sxm.yaml"
    acc.write_text(
        acc.read_text().replace(
            "{value: 3.35e12, unit: B/s,", "{value: null, note: none, unit: B/s,"
        )
    )
    kb, findings = load_kb(tmp_path / "kb")
    assert findings == []
    with pytest.raises(NotApplicable):
        QuantityValues(kb).resolve(kb.accelerators["h100-sxm"], "ridge_point_bf16")
    # a derived row over a null input is not applicable there, not broken
    assert [f.rule for f in validate(tmp_path / "kb").errors] == []


def test_parallel_checks_equal_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    kb, _ = load_kb(SMALL_KB)
    serial = run_checks(kb)
    monkeypatch.setattr("flopkb.kb.PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr("flopkb.check.workers_for", lambda n: 2)
    assert run_checks(kb) == serial


def test_a_crash_is_reported_when_validating_given_files_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_checks()

    def broken(ctx):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("flopkb.check.base.CHECKS", [*CHECKS, broken])
    one_file = SMALL_KB / "records" / "classes" / "mamba2-ssd.yaml"
    result = validate([one_file])
    assert [f.rule for f in result.errors] == ["FKB199"]
    assert not result.ok


def test_a_formula_of_constants_is_evaluated_too(tmp_path: Path) -> None:
    shutil.copytree(SMALL_KB, tmp_path / "kb")
    ridge = tmp_path / "kb/records/quantities/ridge_point_bf16.yaml"
    ridge.write_text(
        ridge.read_text().replace("formula: bf16_tensor_flops / hbm_bandwidth", "formula: 1 / 0")
    )
    codes = [f.rule for f in validate(tmp_path / "kb").errors]
    assert "FKB404" in codes
