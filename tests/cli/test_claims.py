"""`flopkb claims`: JSON equals `list_claims`; filters pass through; bad ids exit 2."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from flopkb.claims import list_claims
from flopkb.cli import app
from flopkb.kb import load_kb
from flopkb.paths import bundled_root

runner = CliRunner()
KB = ["--kb", str(bundled_root())]


def test_json_equals_library() -> None:
    result = runner.invoke(app, [*KB, "claims", "--format", "json"])
    assert result.exit_code == 0, result.output
    kb, _ = load_kb(bundled_root())
    assert json.loads(result.stdout) == list_claims(kb)


def test_filters_pass_through() -> None:
    result = runner.invoke(
        app, [*KB, "claims", "--basis", "cited", "--record", "samba", "-f", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["claim"] for r in rows} == {"samba/prompt-throughput", "samba/generation-speedup"}


def test_text_table() -> None:
    result = runner.invoke(app, [*KB, "claims", "--accelerator", "l40s"])
    assert result.exit_code == 0, result.output
    assert "claims" in result.stdout


def test_unknown_quantity_exits_2() -> None:
    result = runner.invoke(app, [*KB, "claims", "--quantity", "hbm_bandwith"])
    assert result.exit_code == 2
    assert "hbm_bandwidth" in result.stderr


def test_text_shows_what_a_derived_row_computes() -> None:
    result = runner.invoke(
        app, [*KB, "claims", "--basis", "derived"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    # int8_to_bf16_ratio beside its basis (a formula row), and Jamba-1.5-Mini vs Mixtral's KV cache
    # computed from the architecture records beside the magnitude (a derived_from row)
    assert "derived (2" in result.stdout
    assert "8x (computed 8" in result.stdout
