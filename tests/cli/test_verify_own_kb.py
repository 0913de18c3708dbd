"""`flopkb verify` on a KB of one's own: the worked example of docs/verify-your-own-claim.md
(its own Triton kernel, reference, experiment declaration and claim) is planned alone, its
correctness check runs through the Triton interpreter, and nothing bundled runs beside it."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import EXAMPLE, copy_example

CLAIM = "fused-rmsnorm/fused-vs-unfused"
cli = CliRunner()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example as a KB repository of its own (a git top stops the KB search there)."""
    root = tmp_path / "my-kb"
    copy_example(root)
    (root / ".git").mkdir()
    monkeypatch.chdir(root)
    return root


def _plan(args: list[str]) -> tuple[int, dict]:
    result = cli.invoke(app, [*args, "verify", "--format", "json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_the_documented_example_plans_only_its_claim_and_checks_it() -> None:
    code, payload = _plan(["--kb", str(EXAMPLE)])
    assert code == 0, payload
    claims = [(r["claim"], r["experiment"]) for r in payload["results"]]
    assert claims == [(None, "calibration"), (CLAIM, "rmsnorm-fused-vs-unfused")]
    (row,) = [r for r in payload["results"] if r["claim"] == CLAIM]
    kernels = {c["kernel"].split(" ")[0] for c in row["cpu_check"]}
    assert kernels == {"fused.triton", "unfused.torch"}
    assert all(c["ok"] for c in row["cpu_check"]) and row["expected"]["text"] == "3x"


def test_a_kb_repository_of_ones_own_is_found_and_verified(repo: Path) -> None:
    code, payload = _plan([])
    assert code == 0, payload
    assert {r["experiment"] for r in payload["results"]} == {"calibration",
                                                            "rmsnorm-fused-vs-unfused"}
    assert not (repo / "records" / "evidence").exists()


def test_a_kernel_that_disagrees_with_its_reference_fails_the_plan(repo: Path) -> None:
    fused = repo / "kernels" / "rmsnorm" / "fused.py"
    fused.write_text(fused.read_text().replace("(b_x / rms * b_w)", "(b_x / rms * b_w * 1.5)"))
    code, payload = _plan([])
    assert code == 1
    (row,) = [r for r in payload["results"] if r["claim"] == CLAIM]
    assert row["cpu_check"][0]["ok"] is False


def test_a_claim_with_nothing_runnable_says_why_in_one_line(repo: Path) -> None:
    cls = repo / "records" / "classes" / "fused-rmsnorm.yaml"
    cls.write_text(cls.read_text().replace("      verify: {experiment: rmsnorm-fused-vs-unfused}\n",
                                           ""))
    result = cli.invoke(app, ["verify", "--claim", CLAIM])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and CLAIM in lines[0] and "links no experiment" in lines[0]
    assert result.stdout.strip() == ""


def test_a_mistyped_link_is_refused_not_judged_by_another_experiment(repo: Path) -> None:
    cls = repo / "records" / "classes" / "fused-rmsnorm.yaml"
    cls.write_text(cls.read_text().replace("experiment: rmsnorm-fused-vs-unfused",
                                           "experiment: ssd-vs-scan"))
    code, payload = _plan([])
    assert code == 1
    (row,) = [r for r in payload["results"] if r["claim"] == CLAIM]
    assert row["verdict"] == "error" and "FKB528" in row["reason"]
    # the SSD experiment was not run for the RMSNorm claim; the KB's own experiment, now linked
    # by nothing, is still checked (it is the KB's), with no claim
    assert "cpu_check" not in row
    assert [(r["claim"], r["experiment"]) for r in payload["results"]
            if r["experiment"] != "calibration"] == [(CLAIM, "ssd-vs-scan"),
                                                     (None, "rmsnorm-fused-vs-unfused")]
