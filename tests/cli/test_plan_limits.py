"""Plan mode (`flopkb verify` without --gpu) bounds the KB code it runs, and runs none with
`--no-kb-code` (issue 27): a `while True` kernel with `time_limit_s: 1` hung the plan until
killed, a 30000 x 30000 CPU point reached 9 GB, and calibration and unlinked KB experiments ran
the KB's code with no flag to stop them."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import shutil
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.paths import bundled_root
from flopkb.verify import sandbox
from tests.cli.kbrepo import copy_example

EXPERIMENT = "rmsnorm-fused-vs-unfused"
cli = CliRunner()


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    copy_example(root)
    return root


def _declare(root: Path, **changes) -> None:
    path = root / "experiments" / f"{EXPERIMENT}.yaml"
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _kernel_body(root: Path, lines: str) -> None:
    """Put `lines` first in the KB's fused kernel wrapper `rmsnorm(x, weight)`."""
    path = root / "kernels" / "rmsnorm" / "fused.py"
    text = path.read_text()
    head = "def rmsnorm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:\n"
    assert head in text
    path.write_text(text.replace(head, head + lines))


def _plan(root: Path, *args: str) -> tuple[int, dict, float]:
    start = time.monotonic()
    result = cli.invoke(app, ["--kb", str(root), "verify", *args, "--format", "json"])
    return result.exit_code, json.loads(result.stdout), time.monotonic() - start


def _row(payload: dict) -> dict:
    (row,) = [r for r in payload["results"] if r["experiment"] == EXPERIMENT]
    return row


def test_a_kernel_that_never_returns_fails_its_check_in_about_its_time_limit(kb: Path) -> None:
    _declare(kb, time_limit_s=1)
    _kernel_body(kb, "    while True:\n        pass\n")
    code, payload, spent = _plan(kb)
    assert code == 1
    (check,) = _row(payload)["cpu_check"]
    assert check["ok"] is False
    assert check["error"].startswith(f"{kb / 'experiments' / EXPERIMENT}.yaml: TimeoutError")
    assert "1.5 x time_limit_s 1" in check["error"]
    # the calibration beside it still ran and passed; the whole plan stayed short
    (calibration,) = [r for r in payload["results"] if r["experiment"] == "calibration"]
    assert calibration["cpu_check"] and all(c["ok"] for c in calibration["cpu_check"])
    assert spent < 30, spent


def test_a_huge_cpu_point_is_a_memory_failure(kb: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    # a small cap so the first 30000 x 30000 input (1.8 GB in bfloat16) is already refused
    monkeypatch.setattr(sandbox, "MEMORY_CAP_BYTES", 256 << 20)
    _declare(kb, cpu_point={"rows": 30000, "cols": 30000})
    code, payload, spent = _plan(kb)
    assert code == 1
    checks = _row(payload)["cpu_check"]
    assert checks and not any(c["ok"] for c in checks)
    assert all("memory cap: 256 MiB" in c["error"] for c in checks), checks
    assert spent < 60, spent


def test_a_check_that_exits_or_prints_is_its_own_failure(kb: Path) -> None:
    _kernel_body(kb, "    print('{\"ok\": true}')\n    import os\n    os._exit(3)\n")
    code, payload, _ = _plan(kb)
    assert code == 1
    (check,) = _row(payload)["cpu_check"]
    assert check["ok"] is False and "exit status 3" in check["error"]


def test_no_kb_code_runs_none_of_the_kbs_code_and_lists_what_it_skipped(
        kb: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _kernel_body(kb, f"    open({str(marker)!r}, 'w').close()\n")
    # a KB operator folder named like a bundled one stands in for it: calibration then runs
    # the KB's gemm, which is KB code too
    gemm = kb / "kernels" / "gemm"
    shutil.copytree(bundled_root() / "kernels" / "gemm", gemm,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (gemm / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    code, payload, _ = _plan(kb, "--no-kb-code")
    assert not marker.exists()
    assert code == 0, payload
    assert payload["not_checked"] == ["calibration", EXPERIMENT]
    row = _row(payload)
    assert row["cpu_check"] == [] and "--no-kb-code" in row["reason"]
    assert "rmsnorm" in row["reason"]
    # the text report names them too
    result = cli.invoke(app, ["--kb", str(kb), "verify", "--no-kb-code"])
    assert "not checked (--no-kb-code" in result.stderr and EXPERIMENT in result.stderr
    # without the flag the KB's code runs (the marker says so)
    _plan(kb)
    assert marker.exists()


def test_no_kb_code_still_checks_flopkbs_own_code(kb: Path) -> None:
    code, payload, _ = _plan(kb, "--no-kb-code")
    assert code == 0 and payload["not_checked"] == [EXPERIMENT]
    (calibration,) = [r for r in payload["results"] if r["experiment"] == "calibration"]
    assert calibration["cpu_check"] and all(c["ok"] for c in calibration["cpu_check"])


def test_no_kb_code_is_refused_with_gpu(kb: Path) -> None:
    result = cli.invoke(app, ["--kb", str(kb), "verify", "--no-kb-code", "--gpu"])
    assert result.exit_code == 2 and "--no-kb-code is for the plan" in result.stderr


def test_a_failing_check_names_side_implementation_error_and_tolerance(kb: Path) -> None:
    """It printed `CPU check: 0/2 ok: 0.6116218083689794`: no side, implementation or
    tolerance, and the correct side counted as failing."""
    fused = kb / "kernels" / "rmsnorm" / "fused.py"
    fused.write_text(fused.read_text().replace("(b_x / rms * b_w)", "(b_x / rms * b_w * 1.5)"))
    code, payload, _ = _plan(kb)
    assert code == 1
    checks = {c["side"]: c for c in _row(payload)["cpu_check"]}
    assert checks["fused"]["ok"] is False and checks["unfused"]["ok"] is True
    assert checks["fused"]["implementation"] == "triton"
    result = cli.invoke(app, ["--kb", str(kb), "verify"], env={"COLUMNS": "400"})
    assert result.exit_code == 1
    assert "1/2 ok" in result.stdout
    assert "FAILED side fused, implementation triton [5x37, bfloat16]: error 0.4" in result.stdout
    assert "> tolerance 0.02" in result.stdout
