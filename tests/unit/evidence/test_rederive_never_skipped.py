"""Re-derivation is never skipped by what a record says of itself (issue 27): evidence with no
measurement validated (one FKB504 warning) and backed a `basis: measured` row when it named a
judge_revision its experiment does not have; a stored figure outside its own interval, or one
that does not follow from the stored times beside it, was accepted.

The evidence is written by the runner's GPU path on the CPU (the example KB, fake timings:
tests/unit/verify/test_generic.py), then edited as a PR author could.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.evidence.pooled import pooled
from flopkb.kb import load_kb
from tests.unit.evidence.test_judge_revision import CLAIM, DECL
from tests.unit.verify.test_generic import example_evidence

cli = CliRunner()


@pytest.fixture
def kb_with_evidence(tmp_path: Path) -> tuple[Path, Path]:
    """The example KB with one confirmed evidence record of its own claim (as the revision
    tests have it)."""
    return example_evidence(tmp_path)


def _errors(root: Path, path: Path) -> list[dict]:
    result = cli.invoke(app, ["--kb", str(root), "validate", "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return [e for e in json.loads(result.stdout)["errors"] if e["file"] == str(path)]


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _unmeasured(data: dict) -> None:
    data["rounds"] = []
    data["statistics"].pop("data", None)
    data["sweep"] = []


def _speaks(root: Path) -> bool:
    kb, _ = load_kb(root)
    found = pooled(kb, CLAIM).get((CLAIM, "h200-sxm"))
    return found is not None and found.verdict not in ("unverified", "none")


@pytest.mark.parametrize("revision", [2, 7, 1_000_000])
def test_a_revision_above_the_experiments_is_an_error_and_never_speaks(kb_with_evidence,
                                                                       revision: int):
    root, path = kb_with_evidence
    assert _speaks(root)
    _edit(path, lambda d: (_unmeasured(d), d.update(judge_revision=revision)))
    errors = _errors(root, path)
    assert "FKB531" in {e["rule"] for e in errors}, errors
    (found,) = [e for e in errors if e["rule"] == "FKB531"]
    assert f"judge_revision {revision}" in found["message"] and found["line"] > 1
    assert not _speaks(root)


def test_an_earlier_revision_still_needs_its_measurement(kb_with_evidence):
    root, path = kb_with_evidence
    (root / DECL).write_text((root / DECL).read_text() + "judge_revision: 3\n")
    assert _errors(root, path) == []  # stale (a warning), its rounds stored: history
    _edit(path, _unmeasured)
    assert "FKB511" in {e["rule"] for e in _errors(root, path)}
    assert not _speaks(root)


def test_a_figure_outside_its_own_interval_is_an_error(kb_with_evidence):
    root, path = kb_with_evidence

    def outside(data: dict) -> None:
        for m in (data["measured"], data["judgements"][0]["measured"]):
            m["value"] = 9.0

    _edit(path, outside)
    messages = [e["message"] for e in _errors(root, path) if e["rule"] == "FKB510"]
    assert any("outside its own interval" in m for m in messages), messages


def test_a_ratio_not_following_from_its_stored_times_is_an_error(kb_with_evidence):
    """Under an earlier judge revision (nothing is judged again) the runner's arithmetic is
    still checked: the stored ratio is the stored times' quotient."""
    root, path = kb_with_evidence
    (root / DECL).write_text((root / DECL).read_text() + "judge_revision: 2\n")

    def forged_times(data: dict) -> None:
        for r in data["rounds"]:
            r["data"]["primary"]["unfused_ms"] = 1.0
            for row in r["sweep"]:
                row["unfused_ms"] = 1.0

    _edit(path, forged_times)
    messages = [e["message"] for e in _errors(root, path) if e["rule"] == "FKB510"]
    assert any("does not follow from the stored times" in m for m in messages), messages
    assert not _speaks(root)


def test_evidence_of_an_experiment_that_does_not_load_never_speaks(kb_with_evidence):
    root, path = kb_with_evidence
    assert _speaks(root)
    # the declaration has an error now (FKB530): it is left out, and nothing judges its evidence
    (root / DECL).write_text((root / DECL).read_text() + "kernels: ['../../']\n")
    assert {"FKB502"} <= {e["rule"] for e in _errors(root, path)}
    assert not _speaks(root)
