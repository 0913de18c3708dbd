"""A record stores a bounded count of rounds (issue 27): a forged record of 1000 rounds of 95
keys each (800 KB) took 87 s in validate before the merge was linear, and even linear it is work
no record needs; past MAX_ROUNDS per combination (MAX_ROUNDS_PER_RECORD in all) it is a schema
error at the `rounds:` node, and the record is not merged nor judged.

CPU time (`time.process_time`), not wall time, with bounds far above what validate needs, so a
busy 2-core host does not make them flaky.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import json
import time
from pathlib import Path

import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.evidence.rounds import merge_rounds
from flopkb.model.evidence import MAX_ROUNDS, MAX_ROUNDS_PER_RECORD
from tests.unit.verify.test_generic import example_evidence

KEYS = 95
cli = CliRunner()


def _validate(root: Path) -> tuple[dict, float]:
    start = time.process_time()
    result = cli.invoke(app, ["--kb", str(root), "validate", "--format", "json"])
    spent = time.process_time() - start
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), spent


def _write(path: Path, data: dict) -> None:
    """Write `data` out in full (a JSON round trip: no YAML anchors for repeated objects)."""
    path.write_text(yaml.safe_dump(json.loads(json.dumps(data)), sort_keys=False))


def _rounds_at(path: Path, count: int, keys: int = KEYS) -> None:
    """The record's first round repeated `count` times, each with `keys` data keys of its own,
    and statistics.data / sweep the merge of them (what verify would have written)."""
    data = yaml.safe_load(path.read_text())
    first = data["rounds"][0]
    rounds = []
    for i in range(count):
        extra = {f"noise_{i}_{j}": float(j) for j in range(keys)}
        rounds.append({"data": {**first["data"], **extra}, "sweep": first["sweep"]})
    merged, sweep = merge_rounds(rounds)
    data["rounds"], data["statistics"]["data"], data["sweep"] = rounds, merged, sweep
    _write(path, data)


def test_validate_rejects_more_rounds_than_the_bound_at_their_node(tmp_path: Path):
    root, path = example_evidence(tmp_path)
    # 300 rounds under the 1 MiB a record file may hold (FKB102 would stop it first)
    _rounds_at(path, 300, keys=2)
    assert path.stat().st_size < 1 << 20
    found, spent = _validate(root)
    assert spent < 20.0, f"validate took {spent:.1f} s of CPU"
    errors = [e for e in found["errors"]
              if e["file"] == str(path) and e["rule"].startswith("FKB1")]
    assert errors, found["errors"]
    assert f"at most {MAX_ROUNDS}" in errors[0]["message"]
    assert errors[0]["line"] > 1  # the `rounds:` node, not the file's top


def test_validate_at_the_bound_is_quick_and_still_re_derives(tmp_path: Path):
    root, path = example_evidence(tmp_path)
    # 10 keys of their own per round: 640 in the merged data, under a mapping's 1000 (FKB115)
    _rounds_at(path, MAX_ROUNDS, keys=10)
    found, spent = _validate(root)
    assert spent < 20.0, f"validate took {spent:.1f} s of CPU"
    assert not [e for e in found["errors"] if e["file"] == str(path)], found["errors"]
    # a forged verdict under that many rounds is still re-derived (and caught)
    data = yaml.safe_load(path.read_text())
    data["verdict"] = data["judgements"][0]["verdict"] = "refuted"
    _write(path, data)
    found, _ = _validate(root)
    assert "FKB510" in {e["rule"] for e in found["errors"] if e["file"] == str(path)}


def test_a_record_bounds_its_rounds_over_every_judgement(tmp_path: Path):
    root, path = example_evidence(tmp_path)
    data = yaml.safe_load(path.read_text())
    first = data["rounds"][0]
    extra = dict(data["judgements"][0], rounds=[first] * MAX_ROUNDS)
    data["judgements"] += [extra] * (MAX_ROUNDS_PER_RECORD // MAX_ROUNDS)
    _write(path, data)
    found, _ = _validate(root)
    messages = [e["message"] for e in found["errors"] if e["file"] == str(path)]
    assert any(f"at most {MAX_ROUNDS_PER_RECORD} rounds in one record" in m
               for m in messages), messages
