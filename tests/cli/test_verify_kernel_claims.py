"""Plan mode of the four kernel-level claims of the bundled KB: every implementation's CPU check
through the Triton interpreter, exit 0; a row excused by design says why."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
from typer.testing import CliRunner

from flopkb.cli import app

cli = CliRunner()


@pytest.mark.parametrize(("claim", "experiment", "checks"), [
    ("selective-ssm-scan/fused-scan-vs-pytorch", "scan-benchmark",
     {"selective_scan.forward.selective_scan T=23",
      "selective_scan.unfused.selective_scan_unfused T=23",
      "attention.sdpa.causal_attention[math]"}),
    ("selective-ssm-scan/fused-scan-vs-flash-attention", "scan-benchmark", set()),
    ("flash-attention-2/non-matmul-flop-cost", "non-matmul-cost",
     {"nonmatmul.forward.fp32_chain[exp, 9]", "gemm.cublas.torch_matmul"}),
    ("selective-ssm-scan/worst-at-long-prefill", "prefill-trend", set()),
])
def test_plan_mode_runs_every_cpu_check_and_exits_0(claim, experiment, checks):
    result = cli.invoke(app, ["--kb", "bundled", "verify", "--claim", claim, "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout)["results"] if r["claim"] == claim]
    assert [(r["experiment"], r["verdict"]) for r in rows] == [(experiment, "not-run")]
    ran = rows[0]["cpu_check"]
    assert ran and all(c["ok"] for c in ran), ran
    assert checks <= {c["kernel"] for c in ran}


def test_the_scan_rows_run_at_the_papers_conditions():
    result = cli.invoke(app, ["--kb", "bundled", "verify", "--claim",
                              "selective-ssm-scan/fused-scan-vs-flash-attention", "--format",
                              "json"])
    row = next(r for r in json.loads(result.stdout)["results"] if r["claim"])
    cond = row["conditions"]
    assert (cond["batch"], cond["dim"], cond["state_dim"], cond["dtype"]) == (1, 1024, 16,
                                                                               "bfloat16")
    assert (cond["min_len"], cond["max_len"]) == (2**9, 2**19)
    assert "no knob" not in row["reason"]


def test_a_row_no_single_gpu_judges_says_why_and_exits_0():
    result = cli.invoke(app, ["--kb", "bundled", "verify", "--claim",
                              "gpu-reduction/run-to-run-insufficient-multinode"])
    assert result.exit_code == 0, result.output
    assert "not verifiable on one GPU by design" in result.output
    claims = cli.invoke(app, ["--kb", "bundled", "claims", "--record", "gpu-reduction"])
    assert "not applicable: multi-node" in claims.output


def test_a_not_applicable_reason_reaches_the_terminal_escaped(tmp_path):
    from tests.unit.verify_fixtures import write_kb

    root = write_kb(tmp_path)
    path = next((root / "records" / "classes").glob("*.yaml"))
    text = path.read_text()
    assert text.count("experiment: reduction-determinism\n") == 1
    # a YAML double-quoted \e is ESC: an OSC 52 clipboard write in the reason
    path.write_text(text.replace("experiment: reduction-determinism\n",
                                 'not_applicable: "two GPUs \\e]52;c;bad\\a needed"\n'))
    result = cli.invoke(app, ["--kb", str(root), "verify", "--claim", "test-class/determinism"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\\x1b]52" in result.output


def test_the_plan_says_where_a_part_specific_claim_is_judged():
    result = cli.invoke(app, ["--kb", "bundled", "verify", "--claim",
                              "flash-attention-2/non-matmul-flop-cost", "--format", "json"])
    row = next(r for r in json.loads(result.stdout)["results"] if r["claim"])
    assert "judged on a100-sxm4-80gb, a100-pcie-80gb only" in row["reason"]
