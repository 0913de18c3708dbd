"""`flopkb model show`: JSON equals the library's answer; text renders; bad input exits 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from flopkb.architecture.show import model_show
from flopkb.cli import app
from flopkb.kb import load_kb
from flopkb.paths import bundled_root

runner = CliRunner()
KB = ["--kb", str(bundled_root())]


def test_show_json_equals_library() -> None:
    args = [*KB, "model", "show", "jamba-1-5-mini", "--context", "262144", "--on", "h200-sxm"]
    result = runner.invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    kb, _ = load_kb(bundled_root())
    expected = model_show(kb, "jamba-1-5-mini", context=262144, on=["h200-sxm"])
    assert json.loads(result.stdout) == json.loads(json.dumps(expected))
    assert json.loads(result.stdout)["computed"]["kv_cache_bytes"] == 4 * 2**30


def test_show_text_has_config_computed_and_bounds() -> None:
    result = runner.invoke(app, [*KB, "model", "show", "nemotron-h-8b", "--on", "h100-sxm"])
    assert result.exit_code == 0, result.output
    for text in ("hybrid_override_pattern", "attention share", "7.69%", "h100-sxm", "roofline"):
        assert text in result.stdout


def test_unknown_ids_exit_2() -> None:
    result = runner.invoke(app, [*KB, "model", "show", "nemotron-h-9b"])
    assert result.exit_code == 2 and "nemotron-h-8b" in result.output
    result = runner.invoke(app, [*KB, "model", "show", "nemotron-h-8b", "--on", "h999"])
    assert result.exit_code == 2


def test_what_if_reports_model_bounds() -> None:
    args = [*KB, "graph", "what-if", "h200-sxm", "--set", "hbm_bandwidth=9.6", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    moved = {m["architecture"]: m for m in json.loads(result.stdout)["architectures"]}
    llama = moved["llama-3-1-8b"]
    assert llama["ratio"]["decode_tokens_per_s"] == 2.0
    assert llama["ratio"]["prefill_tokens_per_s"] == 1.0


def test_claims_show_the_computed_figure() -> None:
    result = runner.invoke(app, [*KB, "claims", "--record", "jamba"])
    assert result.exit_code == 0, result.output
    # (the table may wrap the cell over lines)
    assert "(computed" in result.stdout and "8x)" in result.stdout


def test_a_record_lacking_a_size_exits_1(tmp_path: Path) -> None:
    shutil.copytree(bundled_root() / "records", tmp_path / "records")
    arch = tmp_path / "records" / "architectures" / "nemotron-h-8b.yaml"
    lines = [ln for ln in arch.read_text().splitlines() if not ln.startswith("  ssm_heads:")]
    arch.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["--kb", str(tmp_path), "model", "show", "nemotron-h-8b"])
    assert result.exit_code == 1 and "ssm_heads" in result.output


def _broken_architecture(tmp_path: Path, old: str, new: str) -> Path:
    shutil.copytree(bundled_root() / "records", tmp_path / "records",
                    ignore=shutil.ignore_patterns("*.png"))  # fmt: skip
    arch = tmp_path / "records" / "architectures" / "llama-3-1-8b.yaml"
    text = arch.read_text(encoding="utf-8")
    assert old in text
    arch.write_text(text.replace(old, new, 1), encoding="utf-8")
    return arch


def test_an_architecture_that_does_not_load_is_named_with_its_first_error(
    tmp_path: Path,
) -> None:
    """issue 27: a schema error dropped the record and model show said "no architecture
    record" (exit 2), as for a typo of the id."""
    _broken_architecture(tmp_path, "\nlayers:\n", "\nlayerz:\n")
    result = runner.invoke(app, ["--kb", str(tmp_path), "model", "show", "llama-3-1-8b"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no architecture record" not in lines[0]
    assert "'llama-3-1-8b' exists (" in lines[0]
    assert "llama-3-1-8b.yaml) but does not load" in lines[0]
    assert "FKB12" in lines[0] and "layers" in lines[0]
    as_json = runner.invoke(
        app, ["--kb", str(tmp_path), "model", "show", "llama-3-1-8b", "-f", "json"]
    )
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["error"]["kind"] == "record"


def test_an_architecture_loaded_with_schema_errors_is_not_shown(tmp_path: Path) -> None:
    _broken_architecture(tmp_path, "  d_model: {value: 4096,", '  d_model: {value: "big",')
    result = runner.invoke(app, ["--kb", str(tmp_path), "model", "show", "llama-3-1-8b"])
    assert result.exit_code == 1 and result.stdout == ""
    assert "but has schema errors" in result.stderr and "FKB121" in result.stderr
