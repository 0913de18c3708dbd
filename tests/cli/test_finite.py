"""Absurd but finite spec values (issue 18: 1e300 / 1e-300) never make a command exit 2:
every ratio and rounding path is finite-safe, and JSON stays JSON (no Infinity, no NaN)."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.graph.values import ratio
from flopkb.hardware.model import finite_ratio, rounded

runner = CliRunner()
BUNDLED = Path(__file__).resolve().parents[2] / "records"


def absurd_kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(BUNDLED, root / "records", ignore=shutil.ignore_patterns("*.png"))
    for name, value in (("h200-sxm", "1e300"), ("h100-sxm", "1e-300")):
        path = root / "records/accelerators" / f"{name}.yaml"
        text = path.read_text(encoding="utf-8")
        old = "  bf16_tensor_flops:\n    value: 989.5\n"
        assert old in text
        path.write_text(text.replace(old, f"  bf16_tensor_flops:\n    value: {value}\n"))
    return root


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "command",
    [
        ["hw", "compare", "h100-sxm", "h200-sxm"],
        ["hw", "compare", "h200-sxm", "h100-sxm"],
        ["graph", "diff", "h100-sxm", "h200-sxm"],
        ["graph", "diff", "h200-sxm", "h100-sxm"],
        ["hw", "show", "h200-sxm"],
        ["hw", "show", "h100-sxm"],
    ],
)
def test_absurd_specs_never_exit_2(tmp_path: Path, command: list[str]) -> None:
    root = absurd_kb(tmp_path)
    text = runner.invoke(app, ["--kb", str(root), *command])
    assert text.exit_code == 0, text.output
    as_json = runner.invoke(app, ["--kb", str(root), *command, "-f", "json"])
    assert as_json.exit_code == 0, as_json.output
    _strict_json(as_json.stdout)


def test_hw_compare_says_why_a_ratio_is_missing(tmp_path: Path) -> None:
    root = absurd_kb(tmp_path)
    result = runner.invoke(
        app, ["--kb", str(root), "hw", "compare", "h100-sxm", "h200-sxm", "-f", "json"]
    )
    rows = {r["quantity"]: r for r in _strict_json(result.stdout)["quantities"]}
    row = rows["bf16_tensor_flops"]
    assert row["ratio"] is None and "out of range" in row["note"]
    text = runner.invoke(app, ["--kb", str(root), "hw", "compare", "h100-sxm", "h200-sxm"])
    assert "n/a*" in text.stdout and "* ratio out of range" in text.stdout


def test_ratio_and_rounding_are_finite_safe() -> None:
    assert finite_ratio(1e-300, 1e300) is None
    assert finite_ratio(0.0, 1.0) is None
    assert finite_ratio(2.0, 3.0) == 1.5
    assert ratio(1e-300, 1e300) is None
    assert ratio(5e-324, 1.0) is None
    assert rounded(math.inf) is None and rounded(math.nan) is None
    assert rounded(1e-300) == 1e-300 and rounded(123.4567891) == 123.457


def test_absurd_specs_are_a_validation_error(tmp_path: Path) -> None:
    root = absurd_kb(tmp_path)
    result = runner.invoke(app, ["--kb", str(root), "validate", "-f", "json"])
    assert result.exit_code == 1, result.output
    found = [e for e in _strict_json(result.stdout)["errors"] if e["rule"] == "FKB423"]
    assert {(e["record"], Path(e["file"]).name) for e in found} == {
        ("h200-sxm", "h200-sxm.yaml"),
        ("h100-sxm", "h100-sxm.yaml"),
    }
    assert all(e["line"] == 13 for e in found)


def test_real_specs_are_not_absurd() -> None:
    result = runner.invoke(app, ["--kb", str(BUNDLED.parent), "validate", "-f", "json"])
    assert not [e for e in _strict_json(result.stdout)["errors"] if e["rule"] == "FKB423"]


def test_huge_and_tiny_ratios_print_short() -> None:
    # 1e300 TB/s over 3.35: once a 300-digit `x2985...032.00`; a tiny one once read `x0.00`
    for value, shown in (("1e300", "x2.99e+299"), ("1e-300", "x2.99e-301")):
        result = runner.invoke(
            app, ["--kb", str(BUNDLED.parent), "graph", "what-if", "h100-sxm",
                  "--set", f"hbm_bandwidth={value}"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert shown in result.stdout
        assert re.search(r"\d{20}", result.stdout) is None


def capacity_kb(tmp_path: Path, value: str) -> Path:
    """The bundled records with h200-sxm's memory capacity replaced by `value` GB."""
    root = tmp_path / "kb"
    shutil.copytree(BUNDLED, root / "records", ignore=shutil.ignore_patterns("*.png"))
    path = root / "records/accelerators/h200-sxm.yaml"
    text = path.read_text(encoding="utf-8")
    old = "  memory_capacity:\n    value: 141.0\n"
    assert old in text
    path.write_text(text.replace(old, f"  memory_capacity:\n    value: {value}\n"))
    return root


@pytest.mark.parametrize("value", ["1e300", "1e290"])
def test_model_show_with_an_absurd_capacity_is_one_line_and_exit_1(
    tmp_path: Path, value: str
) -> None:
    """issue 27: 1e300 GB is 1e309 bytes, inf as a float, and `inf // x` is NaN: every model
    show exited 2 (ValueError). The other parts' bounds are still shown."""
    root = capacity_kb(tmp_path, value)
    result = runner.invoke(app, ["--kb", str(root), "model", "show", "llama-3-1-8b"])
    assert result.exit_code == 1, result.output
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("flopkb: error: h200-sxm: out of range")
    assert "Traceback" not in result.output
    as_json = runner.invoke(app, ["--kb", str(root), "model", "show", "llama-3-1-8b", "-f", "json"])
    assert as_json.exit_code == 1
    rooflines = _strict_json(as_json.stdout)["rooflines"]  # type: ignore[index]
    assert rooflines["h200-sxm"]["max_batch"] is None
    assert "out of range" in rooflines["h200-sxm"]["out_of_range"]
    assert rooflines["h100-sxm"]["max_batch"] > 0 and rooflines["h100-sxm"]["out_of_range"] is None
    # the other parts alone answer as before
    other = runner.invoke(
        app, ["--kb", str(root), "model", "show", "llama-3-1-8b", "--on", "h100-sxm"]
    )
    assert other.exit_code == 0, other.output


@pytest.mark.parametrize(
    "settings",
    [
        ["memory_capacity=1e308"],
        ["memory_capacity=1e290"],
        ["hbm_bandwidth=1e308", "bf16_tensor_flops=1e308"],
    ],
)
def test_what_if_past_the_float_range_is_one_line_and_exit_1(settings: list[str]) -> None:
    args = ["--kb", str(BUNDLED.parent), "graph", "what-if", "h200-sxm"]
    for setting in settings:
        args += ["--set", setting]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and "out of range" in errors[0], result.stderr
    as_json = runner.invoke(app, [*args, "-f", "json"])
    assert as_json.exit_code == 1
    assert _strict_json(as_json.stdout)["error"]["kind"] == "input"  # type: ignore[index]


def test_what_if_refuses_other_scripts_digits() -> None:
    result = runner.invoke(
        app, ["--kb", str(BUNDLED.parent), "graph", "what-if", "h200-sxm",
              "--set", "memory_capacity=\u09ea"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "ASCII digits" in result.stderr and "'4'" in result.stderr
