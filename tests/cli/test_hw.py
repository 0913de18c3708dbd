"""`flopkb hw`: JSON equals the library's answer; text renders; unknown ids exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.hardware.show import hw_compare, hw_show
from flopkb.kb import load_kb
from flopkb.paths import bundled_root

runner = CliRunner()


def _kb_args() -> list[str]:
    return ["--kb", str(bundled_root())]


def test_show_json_equals_library() -> None:
    result = runner.invoke(app, [*_kb_args(), "hw", "show", "h200-sxm", "--format", "json"])
    assert result.exit_code == 0, result.output
    kb, _ = load_kb(bundled_root())
    assert json.loads(result.stdout) == json.loads(json.dumps(hw_show(kb, "h200-sxm"), default=str))


def test_show_text_lists_specs_and_computed() -> None:
    result = runner.invoke(app, [*_kb_args(), "hw", "show", "h200-sxm"])
    assert result.exit_code == 0, result.output
    assert "ridge_point_bf16" in result.stdout and "206.146" in result.stdout


def test_compare_json_equals_library() -> None:
    result = runner.invoke(
        app, [*_kb_args(), "hw", "compare", "h100-sxm", "h200-sxm", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    kb, _ = load_kb(bundled_root())
    assert json.loads(result.stdout) == hw_compare(kb, "h100-sxm", "h200-sxm")


def test_compare_text() -> None:
    result = runner.invoke(app, [*_kb_args(), "hw", "compare", "h100-sxm", "h200-sxm"])
    assert result.exit_code == 0, result.output
    assert "hbm_bandwidth" in result.stdout


def test_unknown_accelerator_exits_2_with_one_line() -> None:
    result = runner.invoke(app, [*_kb_args(), "hw", "show", "h300"])
    assert result.exit_code == 2
    assert "no accelerator record 'h300'" in result.stderr


def test_show_computes_the_derived_rows_of_the_part() -> None:
    result = runner.invoke(
        app, [*_kb_args(), "hw", "show", "h200-sxm", "--format", "json"], env={"COLUMNS": "200"}
    )
    rows = {d["claim"]: d for d in json.loads(result.stdout)["derived"]}
    int8 = rows["int8-gemm/int8-native-beats-emulated"]
    # int8_to_bf16_ratio on the H200 datasheet (1979 TOPS / 989 TFLOP/s); qualitative: not judged
    assert int8["value"] == pytest.approx(1979 / 989, rel=1e-3)
    assert int8["agrees"] is None
    text = runner.invoke(app, [*_kb_args(), "hw", "show", "h200-sxm"], env={"COLUMNS": "200"})
    assert "derived claims computed on this part" in text.stdout
    assert "int8-gemm/int8-native-beats-emulated" in text.stdout


def test_show_gives_both_measured_ceilings_of_the_calibration() -> None:
    kb, _ = load_kb(bundled_root())
    measured = hw_show(kb, "h200-sxm")["measured"]
    assert set(measured) == {"bf16_gemm", "copy_bandwidth"}
    calibration = kb.evidence[measured["bf16_gemm"]["evidence"]]
    data = calibration.statistics["data"]
    assert measured["bf16_gemm"]["value"] == pytest.approx(data["bf16_tflops"], rel=1e-5)
    assert measured["copy_bandwidth"]["value"] == pytest.approx(data["copy_gbps"], rel=1e-5)
    assert measured["copy_bandwidth"]["unit"] == "GB/s"
    text = runner.invoke(app, [*_kb_args(), "hw", "show", "h200-sxm"], env={"COLUMNS": "120"})
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert any("bf16_gemm" in ln and "TFLOP/s" in ln for ln in lines)
    assert any("copy_bandwidth" in ln and "GB/s" in ln and f"{data['copy_gbps']:g}" in ln
               for ln in lines)  # fmt: skip
