"""Evidence of a KB's own experiment re-derives like the bundled ones', and an experiment's
`judge_revision` turns evidence read under an earlier rule stale instead of "forged".

The evidence is written by the runner's GPU path on the CPU (the documented example KB, fake
timings: tests/unit/verify/test_generic.py), then edited the way a hand or a rule change would.
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
from tests.unit.verify.test_generic import example_evidence

CLAIM = "fused-rmsnorm/fused-vs-unfused"
DECL = Path("experiments") / "rmsnorm-fused-vs-unfused.yaml"
cli = CliRunner()


@pytest.fixture
def kb_with_evidence(tmp_path: Path) -> tuple[Path, Path]:
    """The example KB at a tiny point, with one confirmed evidence record of its own claim."""
    return example_evidence(tmp_path)


def _findings(root: Path) -> list[tuple[str, str]]:
    result = cli.invoke(app, ["--kb", str(root), "validate", "--format", "json"])
    data = json.loads(result.stdout)
    return sorted((f["rule"], f["severity"]) for key in ("errors", "warnings", "notes")
                  for f in data.get(key, []) if f["rule"].startswith("FKB5"))


def _set_revision(root: Path, revision: int) -> None:
    text = (root / DECL).read_text()
    (root / DECL).write_text(text + f"judge_revision: {revision}\n")


def _forge(path: Path, verdict: str) -> None:
    data = yaml.safe_load(path.read_text())
    data["verdict"] = verdict
    data["judgements"][0]["verdict"] = verdict
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _pooled_verdict(root: Path) -> tuple[str, bool]:
    kb, _ = load_kb(root)
    p = pooled(kb, CLAIM)[(CLAIM, "h200-sxm")]
    return p.verdict, p.stale


def test_evidence_records_the_revision_and_a_kb_experiment_re_derives(kb_with_evidence):
    root, path = kb_with_evidence
    assert yaml.safe_load(path.read_text())["judge_revision"] == 1
    assert _findings(root) == []
    assert _pooled_verdict(root) == ("confirmed", False)
    # a hand-edited verdict of the KB's own (hook-less) experiment is re-derived: an error
    _forge(path, "refuted")
    assert ("FKB510", "error") in _findings(root)


def test_raising_the_revision_stales_the_evidence_instead_of_calling_it_forged(
        kb_with_evidence):
    root, path = kb_with_evidence
    _set_revision(root, 2)
    assert _findings(root) == [("FKB504", "warning")]
    assert _pooled_verdict(root) == ("confirmed", True)
    # a forged verdict under an old revision gains nothing: it is stale, never current
    _forge(path, "refuted")
    assert _findings(root) == [("FKB504", "warning")]
    assert _pooled_verdict(root) == ("refuted", True)
    # evidence claiming the current revision is re-derived by the current rule
    data = yaml.safe_load(path.read_text())
    data["judge_revision"] = 2
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert ("FKB510", "error") in _findings(root)


def test_a_kb_hook_judge_is_never_run_by_validate_and_says_so(kb_with_evidence):
    root, _ = kb_with_evidence
    marker = root / "hook-was-imported"
    hook = root / "kernels" / "rmsnorm" / "judge_hook.py"
    hook.write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('imported')\n"
        "DEFAULTS = {'rows': 5, 'cols': 37}\n"
        "def cpu_check(ctx):\n    pass\n"
        "def measure(ctx, cond):\n    raise NotImplementedError\n"
        "def judge(m, mag, cond):\n    raise NotImplementedError\n")
    (root / DECL).write_text((root / DECL).read_text() + "hook: rmsnorm.judge_hook\n")
    found = _findings(root)
    assert ("FKB517", "info") in found and not [f for f in found if f[1] == "error"]
    assert not marker.exists()


def test_recheck_refuses_evidence_read_by_an_earlier_rule(kb_with_evidence):
    from flopkb.verify.recheck import recheck

    root, _ = kb_with_evidence
    _set_revision(root, 2)
    kb, _ = load_kb(root)
    (ev,) = kb.evidence.values()
    with pytest.raises(ValueError, match=r"revision 1 .* now at revision 2"):
        recheck(kb, ev)
