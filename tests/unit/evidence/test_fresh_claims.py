"""`fresh_claims` (what `flopkb verify --gpu --stale` leaves out): claims whose newest evidence on
the GPU's accelerator still describes the kernels; and the CLI option that uses it."""

from __future__ import annotations

import shutil

from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.evidence import hashing
from flopkb.evidence import store as ev_io
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from flopkb.verify import execute
from tests.unit.evidence.test_hashing_moves import _info, _record
from tests.unit.verify_fixtures import write_kb

CLAIM = "test-class/ssd-scan"


def _kb_with_fresh_evidence(tmp_path):
    root = write_kb(tmp_path)
    shutil.copytree(bundled_root() / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ev_io.write_evidence(_record(hashing.current_hashes(root, _info(root, "ssd-vs-scan"))),
                         root / "records" / "evidence")
    return root


def test_evidence_of_the_current_kernels_is_fresh_on_its_accelerator_only(tmp_path):
    root = _kb_with_fresh_evidence(tmp_path)
    kb, _ = load_kb(root)
    assert hashing.fresh_claims(kb, "h200-sxm") == {CLAIM}
    assert hashing.fresh_claims(kb, "h100-sxm") == set()
    assert hashing.fresh_claims(kb, None) == set()


def test_a_kernel_edit_makes_the_claim_stale(tmp_path):
    root = _kb_with_fresh_evidence(tmp_path)
    cost = root / "kernels" / "ssd" / "cost.py"
    cost.write_text(cost.read_text() + "# edited\n")
    kb, _ = load_kb(root)
    assert hashing.fresh_claims(kb, "h200-sxm") == set()


def test_stale_needs_gpu(tmp_path):
    root = write_kb(tmp_path)
    result = CliRunner().invoke(app, ["--kb", str(root), "verify", "--stale"])
    assert result.exit_code == 2
    assert "--stale" in result.stderr and "--gpu" in result.stderr


def test_stale_runs_only_what_has_no_fresh_evidence(tmp_path, monkeypatch):
    root = _kb_with_fresh_evidence(tmp_path)
    planned: list[str] = []

    def fake_run_gpu(kb, jobs, **_):
        planned.extend(t.claim for job in jobs for t in job.targets)
        return None, None

    monkeypatch.setattr(execute, "gpu_available", lambda: True)
    monkeypatch.setattr(execute, "gpu_accelerator", lambda kb: "h200-sxm")
    monkeypatch.setattr(execute, "run_gpu", fake_run_gpu)
    result = CliRunner().invoke(app, ["--kb", str(root), "verify", "--gpu", "--stale",
                                      "--suite", "all"])
    assert result.exit_code == 0, result.output
    assert planned and CLAIM not in planned
    assert "test-class/schedule" in planned


def test_nothing_stale_says_so_and_runs_nothing(tmp_path, monkeypatch):
    root = _kb_with_fresh_evidence(tmp_path)
    monkeypatch.setattr(execute, "gpu_available", lambda: True)
    monkeypatch.setattr(execute, "gpu_accelerator", lambda kb: "h200-sxm")

    def no_run(*_, **__):
        raise AssertionError("nothing is stale: no run")

    monkeypatch.setattr(execute, "run_gpu", no_run)
    result = CliRunner().invoke(app, ["--kb", str(root), "verify", "--gpu", "--stale",
                                      "--claim", CLAIM])
    assert result.exit_code == 0, result.output
    assert "nothing is stale" in result.stderr
