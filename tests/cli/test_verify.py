"""`flopkb verify` through the CLI: CPU plan mode, JSON shape, and --gpu without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.extras import install_hint
from flopkb.verify import execute
from tests.unit.verify_fixtures import write_kb

cli = CliRunner()


def test_plan_mode_checks_kernels_on_cpu_and_writes_nothing(tmp_path):
    root = write_kb(tmp_path)
    result = cli.invoke(app, ["--kb", str(root), "verify", "--claim", "test-class/determinism",
                              "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["machine"] is None
    by = {(r["claim"], r["experiment"]): r for r in payload["results"]}
    row = by[("test-class/determinism", "reduction-determinism")]
    assert row["verdict"] == "not-run" and row["evidence"] is None
    assert row["cpu_check"] and all(c["ok"] for c in row["cpu_check"])
    assert row["expected"]["kind"] == "qualitative"
    assert by[(None, "calibration")]["verdict"] == "not-run"
    assert set(row) >= {"claim", "experiment", "verdict", "measured", "expected", "evidence"}
    assert list((root / "records" / "evidence").iterdir()) == []


def test_plan_mode_text_prints_a_table(tmp_path):
    root = write_kb(tmp_path)
    result = cli.invoke(app, ["--kb", str(root), "verify", "--claim", "test-class/overhead"])
    assert result.exit_code == 0, result.output
    assert "not-run" in result.stdout and "2 results (2 not-run)" in result.stdout


def test_gpu_without_gpu_exits_2_with_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "gpu_available", lambda: False)
    root = write_kb(tmp_path)
    result = cli.invoke(app, ["--kb", str(root), "verify", "--gpu"])
    assert result.exit_code == 2
    assert "needs a CUDA GPU" in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1
    assert list((root / "records" / "evidence").iterdir()) == []


def test_unknown_claim_is_a_usage_error(tmp_path):
    root = write_kb(tmp_path)
    result = cli.invoke(app, ["--kb", str(root), "verify", "--claim", "nope/nope"])
    assert result.exit_code == 2 and "no claim" in result.stderr


@pytest.mark.parametrize("args", [[], ["--gpu"], ["--gpu", "--claim", "test-class/overhead"]])
def test_without_torch_one_line_names_the_kernels_extra_and_exits_2(tmp_path, args):
    # A fresh interpreter in which `import torch` fails as it does where torch is not installed.
    root = write_kb(tmp_path)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from flopkb.cli import app\n"
        f"app(['--kb', {str(root)!r}, 'verify', *{args!r}])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    # the hint installs the extra's own requirements: no package index carries flopkb
    assert lines == [
        f"flopkb: error: verify needs the kernels extra (missing: torch): {install_hint('kernels')}"
    ]
    assert "'torch>=" in lines[0] and "flopkb[" not in lines[0]
    assert done.stdout == ""
    assert list((root / "records" / "evidence").iterdir()) == []


def test_plan_mode_from_a_fresh_process_uses_the_interpreter(tmp_path):
    """A user's shell has no TRITON_INTERPRET: plan mode must still run the kernels on the CPU
    (triton picks interpreter or compiler at import, and the extra check imports it)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run(
        [sys.executable, "-m", "flopkb", "verify", "--claim", "gpu-reduction/determinism-levels",
         "--format", "json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
        check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
