"""Evidence ids, atomic writes (an interruption leaves nothing behind), lookups and hashing."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest
import yaml

from flopkb.atomic import WritePolicy, writing
from flopkb.check import run_checks
from flopkb.evidence import catalogue, hashing, pooled
from flopkb.evidence import store as ev_io
from flopkb.kb import load_kb
from flopkb.model import EvidenceRecord
from flopkb.paths import bundled_root
from tests.unit.verify_fixtures import stored_ratio, write_kb

WHEN = dt.datetime(2026, 11, 30, 3, 15, 0, tzinfo=dt.timezone.utc)



def _hashes(root, name: str) -> dict[str, str]:
    """The current kernel hashes of experiment `name` as the KB at `root` sees it."""
    return hashing.current_hashes(root, catalogue.for_kb(root).get(name))

def _record(eid: str, claim: str | None, experiment: str, hashes: dict[str, str],
            verdict: str = "confirmed", when: dt.datetime = WHEN, acc: str = "h200-sxm"):
    # the measurement its verdict re-derives from (the ssd-scan row claims 2-8x)
    stored = stored_ratio(verdict, "2-8x" if claim == "test-class/ssd-scan" else "qualitative")
    return EvidenceRecord(
        schema_version=2, id=eid, kind="evidence", title="t",
        history=[{"date": when.date(), "by": "tests", "note": "n"}], claim=claim,
        experiment=experiment, accelerator=acc, implementation="bundled",
        kernel_hashes=hashes, machine={"gpu": "NVIDIA H200"}, verdict=verdict,
        command="flopkb verify --gpu", timestamp=when, **stored,
    )


def test_evidence_id_shape_and_length():
    eid = ev_io.evidence_id("mamba2-ssd/ssd-vs-fused-scan", "h200-sxm", WHEN)
    assert eid == "ev-mamba2-ssd--ssd-vs-fused-scan-h200-sxm-20261130t031500z"
    assert ev_io.evidence_id(None, None, WHEN) == "ev-calibration-unknown-gpu-20261130t031500z"
    long = ev_io.evidence_id("a" * 100 + "/" + "b" * 60, "h200-sxm", WHEN)
    assert len(long) <= ev_io.MAX_ID and long.endswith("-h200-sxm-20261130t031500z")
    assert long != ev_io.evidence_id("a" * 100 + "/" + "c" * 60, "h200-sxm", WHEN)


def test_unique_id_appends_a_counter(tmp_path):
    (tmp_path / "ev-x.yaml").write_text("")
    assert ev_io.unique_id(tmp_path, "ev-x") == "ev-x-2"
    assert ev_io.unique_id(tmp_path, "ev-y") == "ev-y"


def test_write_evidence_round_trips_without_aliases(tmp_path):
    shared = {"a": 1}
    rec = _record("ev-a", "c/r", "ssd-vs-scan", {"ssd/x.py": "0" * 64}).model_copy(
        update={"conditions": {"one": shared, "two": shared}})
    path = ev_io.write_evidence(rec, tmp_path)
    text = path.read_text()
    assert "&id" not in text and "*id" not in text
    assert EvidenceRecord.model_validate(yaml.safe_load(text)) == rec
    assert [p.name for p in tmp_path.iterdir()] == ["ev-a.yaml"]


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch, exc):
    def boom(src, dst):
        raise exc("interrupted")

    # a new file is published with link() (no clobbering), a replaced one with replace()
    monkeypatch.setattr(os, "replace", boom)
    monkeypatch.setattr(os, "link", boom)
    with pytest.raises(exc):
        ev_io.atomic_write_text(tmp_path / "ev-b.yaml", "x: 1\n")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_mid_write_leaves_no_file(tmp_path, monkeypatch):
    def boom(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        ev_io.atomic_write_text(tmp_path / "ev-c.yaml", "x: 1\n")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_overwrite_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "ev-d.yaml"
    target.write_text("old\n")
    monkeypatch.setattr(os, "replace", lambda s, d: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt), writing(WritePolicy(force=True)):
        ev_io.atomic_write_text(target, "new\n")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["ev-d.yaml"]


def test_registry_is_torch_free_and_covers_every_linked_experiment():
    import subprocess
    import sys

    code = ("import sys; import flopkb.evidence.catalogue, flopkb.evidence.hashing, "
            "flopkb.evidence.store, flopkb.evidence.stats, flopkb.check.evidence; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    kb, _ = load_kb(bundled_root())
    linked = {row.verify.experiment for _, _, row in kb.claims() if row.verify and row.verify.runs}
    assert linked <= set(catalogue.EXPERIMENTS), linked - set(catalogue.EXPERIMENTS)


def test_every_registered_experiment_has_a_module_and_kernels():
    import importlib.util

    for name, info in catalogue.EXPERIMENTS.items():
        module = f"flopkb.verify.experiments.{info.module}"
        assert importlib.util.find_spec(module) is not None, name
        files = hashing.kernel_files(None, catalogue.for_kb(None).get(name))
        assert files, name
        assert all(h != hashing.MISSING for h in _hashes(None, name).values()), name
    with pytest.raises(KeyError, match="known"):
        catalogue.get("no-such-experiment")


def test_stale_evidence_and_the_evidence_rule(tmp_path):
    root = write_kb(tmp_path)
    shutil.copytree(bundled_root() / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    hashes = _hashes(root, "ssd-vs-scan")
    folder = root / "records" / "evidence"
    ev_io.write_evidence(_record("ev-fresh", "test-class/ssd-scan", "ssd-vs-scan", hashes), folder)
    ev_io.write_evidence(_record("ev-bad", "test-class/nope", "no-such-exp", {}), folder)
    kb, findings = load_kb(root)
    assert not findings
    assert hashing.stale_evidence(kb) == []
    (root / "kernels" / "ssd" / "chunked.py").write_text("# changed\n")
    (root / "kernels" / "ssd" / "extra.py").write_text("# new\n")
    kb, _ = load_kb(root)
    [stale] = hashing.stale_evidence(kb)
    assert stale.evidence == "ev-fresh"
    assert stale.changed == ("ssd/chunked.py",) and stale.added == ("ssd/extra.py",)
    codes = {(f.rule, f.record) for f in run_checks(kb) if f.rule.startswith("FKB5")}
    assert {("FKB504", "ev-fresh"), ("FKB501", "ev-bad"), ("FKB502", "ev-bad"),
            ("FKB503", "ev-bad")} <= codes


def test_pooled_verdicts_count_every_run_and_never_let_the_latest_win(tmp_path):
    from flopkb.claims import list_claims

    root = write_kb(tmp_path)
    folder = root / "records" / "evidence"
    later = WHEN + dt.timedelta(hours=1)
    claim, exp = "test-class/int8", "int8-native-vs-emulated"
    hashes = _hashes(root, exp)
    for eid, verdict, when, acc in (("ev-1", "confirmed", WHEN, "h200-sxm"),
                                    ("ev-2", "confirmed", later, "h200-sxm"),
                                    ("ev-3", "confirmed", WHEN, "a100-sxm4-80gb"),
                                    ("ev-4", "refuted", later, "a100-sxm4-80gb"),
                                    ("ev-5", "error", later + dt.timedelta(hours=1), "h200-sxm")):
        ev_io.write_evidence(_record(eid, claim, exp, hashes, verdict, when, acc), folder)
    ev_io.write_evidence(_record("ev-cal", None, "calibration", {"a": "b"}), folder)
    kb, _ = load_kb(root)
    assert pooled.latest_verdicts(kb) == {
        claim: {"h200-sxm": "confirmed", "a100-sxm4-80gb": "disagreeing"}}
    row = next(r for r in list_claims(kb) if r["claim"] == claim)
    # an error measured nothing: it neither counts as a run nor withdraws the confirmations
    assert row["verdict_text"] == {"a100-sxm4-80gb": "disagreeing (refuted, confirmed)",
                                   "h200-sxm": "confirmed (2/2 runs)"}
    assert [r["verdict"] for r in row["runs"]["a100-sxm4-80gb"]["per_run"]] == ["refuted",
                                                                               "confirmed"]
    assert [e.id for e in pooled.confirmed_on(kb, claim, ["h200-sxm"])] == ["ev-1", "ev-2"]
    assert pooled.confirmed_on(kb, claim, ["a100-sxm4-80gb"]) == []


def test_fresh_runs_speak_before_stale_ones():
    from flopkb.evidence.pooled import pool

    old = _record("ev-old", "test-class/int8", "int8-native-vs-emulated", {}, "refuted")
    new = _record("ev-new", "test-class/int8", "int8-native-vs-emulated", {}, "confirmed",
                  WHEN + dt.timedelta(hours=1))
    assert pool([old, new], stale={"ev-old"}).text() == "confirmed (1/1 run)"
    both_stale = pool([old, new], stale={"ev-old", "ev-new"})
    assert (both_stale.verdict, both_stale.stale) == ("disagreeing", True)
    assert pool([old, new], stale=set()).text() == "disagreeing (confirmed, refuted)"


def test_evidence_dir(tmp_path: Path):
    assert ev_io.evidence_dir(tmp_path) == tmp_path / "records" / "evidence"


def test_atomic_write_gives_the_file_a_normal_mode(tmp_path):
    target = tmp_path / "ev-e.yaml"
    ev_io.atomic_write_text(target, "x: 1\n")
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_superseded_evidence_is_history_not_stale(tmp_path):
    root = write_kb(tmp_path)
    shutil.copytree(bundled_root() / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "records" / "evidence"
    old = _hashes(root, "ssd-vs-scan")
    ev_io.write_evidence(_record("ev-old", "test-class/ssd-scan", "ssd-vs-scan", old), folder)
    (root / "kernels" / "ssd" / "chunked.py").write_text("# changed\n")
    kb, _ = load_kb(root)
    assert [s.evidence for s in hashing.stale_evidence(kb)] == ["ev-old"]
    new = _hashes(root, "ssd-vs-scan")
    later = WHEN + dt.timedelta(hours=1)
    ev_io.write_evidence(
        _record("ev-new", "test-class/ssd-scan", "ssd-vs-scan", new, "confirmed", later), folder
    )
    kb, _ = load_kb(root)
    assert hashing.stale_evidence(kb) == []
    assert set(kb.evidence) >= {"ev-old", "ev-new"}


def test_a_later_refutation_withdraws_a_confirmation_for_rule_3(tmp_path):
    from flopkb.check.provenance import _confirmed_on

    root = write_kb(tmp_path)
    folder = root / "records" / "evidence"
    claim, exp = "test-class/int8", "int8-native-vs-emulated"
    ev_io.write_evidence(_record("ev-1", claim, exp, {"a": "b"}, "confirmed"), folder)
    kb, _ = load_kb(root)
    assert _confirmed_on(kb) == {claim: {"h200-sxm"}}
    later = WHEN + dt.timedelta(hours=1)
    ev_io.write_evidence(_record("ev-2", claim, exp, {"a": "b"}, "refuted", later), folder)
    kb, _ = load_kb(root)
    assert _confirmed_on(kb) == {}


def test_evidence_timestamps_need_an_offset_and_are_kept_in_utc():
    from pydantic import ValidationError

    (path, *_) = sorted((bundled_root() / "records" / "evidence").glob("ev-*.yaml"))
    data = yaml.safe_load(path.read_text())
    data["timestamp"] = "2026-11-30T08:00:00+05:00"
    assert EvidenceRecord.model_validate(data).timestamp == dt.datetime(
        2026, 11, 30, 3, 0, tzinfo=dt.timezone.utc
    )
    data["timestamp"] = "2026-11-30T08:00:00"
    # a naive time cannot be ordered against the others: a finding, never a crash later
    with pytest.raises(ValidationError, match="timezone"):
        EvidenceRecord.model_validate(data)


def test_a_later_error_does_not_withdraw_a_confirmation(tmp_path):
    from flopkb.check.provenance import _confirmed_on

    root = write_kb(tmp_path)
    folder = root / "records" / "evidence"
    claim, exp = "test-class/int8", "int8-native-vs-emulated"
    ev_io.write_evidence(_record("ev-1", claim, exp, {"a": "b"}, "confirmed"), folder)
    later = WHEN + dt.timedelta(hours=1)
    ev_io.write_evidence(_record("ev-2", claim, exp, {"a": "b"}, "error", later), folder)
    kb, _ = load_kb(root)
    assert _confirmed_on(kb) == {claim: {"h200-sxm"}}


def test_cuda_sources_in_a_kernel_folder_count_towards_the_hash(tmp_path):
    root = write_kb(tmp_path)
    shutil.copytree(bundled_root() / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    folder = root / "records" / "evidence"
    ev_io.write_evidence(_record("ev-a", "test-class/ssd-scan", "ssd-vs-scan",
                                 _hashes(root, "ssd-vs-scan")), folder)
    (root / "kernels" / "ssd" / "helper.cuh").write_text("// new\n")
    (root / "kernels" / "ssd" / "notes.txt").write_text("not a kernel source\n")
    kb, _ = load_kb(root)
    [stale] = hashing.stale_evidence(kb)
    assert stale.added == ("ssd/helper.cuh",)
    ev_io.write_evidence(_record("ev-b", "test-class/ssd-scan", "ssd-vs-scan",
                                 _hashes(root, "ssd-vs-scan"),
                                 when=WHEN + dt.timedelta(hours=1)), folder)
    (root / "kernels" / "ssd" / "helper.cuh").write_text("// changed\n")
    kb, _ = load_kb(root)
    [stale] = hashing.stale_evidence(kb)
    assert stale.evidence == "ev-b" and stale.changed == ("ssd/helper.cuh",)


def test_simulation_evidence_never_backs_rule_3(tmp_path):
    from flopkb.check.provenance import _confirmed_on

    root = write_kb(tmp_path)
    folder = root / "records" / "evidence"
    claim, exp = "test-class/partition", "reduction-partition-simulation"
    # what the simulation's judge reads for `confirmed`: 3 distinct sums, each partition repeatable
    stored = {"statistics": {"data": {"summary": {"repeat_max": 1, "kind": "partition",
                                                  "distinct_per_seed": [3], "partitions": 4}}},
              "measured": {"value": 3.0, "low": 3.0, "high": 3.0, "unit": "distinct results"}}
    ev_io.write_evidence(EvidenceRecord.model_validate({
        **_record("ev-1", claim, exp, {"a": "b"}, "confirmed").model_dump(),
        "conditions": {"simulation": True}, **stored}), folder)
    kb, _ = load_kb(root)
    assert _confirmed_on(kb) == {}
    # the unverified row is not told it could be `measured` (FKB211) on a simulation's word
    assert not [f for f in run_checks(kb) if f.rule == "FKB211" and claim in f.message]
    ev_io.write_evidence(EvidenceRecord.model_validate({
        **_record("ev-2", claim, exp, {"a": "b"}, "confirmed",
                  WHEN + dt.timedelta(hours=1)).model_dump(),
        "conditions": {"simulation": False}, **stored}), folder)
    kb, _ = load_kb(root)
    assert _confirmed_on(kb) == {claim: {"h200-sxm"}}
    assert [f for f in run_checks(kb) if f.rule == "FKB211" and claim in f.message]
