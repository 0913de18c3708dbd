"""A kernel moved is not a kernel changed: recorded vs current kernel hashes pair a path that is
gone with a path that is new when their digests are equal, one-to-one; paths on both sides still
compare by path."""

from __future__ import annotations

import datetime as dt
import shutil

from flopkb.evidence import hashing
from flopkb.evidence import store as ev_io
from flopkb.kb import load_kb
from flopkb.model import EvidenceRecord
from flopkb.paths import bundled_root
from tests.unit.verify_fixtures import stored_ratio, write_kb

A, B, C, E = "a" * 64, "b" * 64, "c" * 64, "e" * 64


def test_a_pure_move_is_fresh():
    found = hashing.compare({"ssd/chunked.py": A, "ssd/cost.py": B},
                            {"ssd/forward.py": A, "ssd/cost.py": B})
    assert found == hashing.Comparison((), (), (), (("ssd/chunked.py", "ssd/forward.py"),))


def test_a_move_with_an_edit_is_a_removal_and_an_addition():
    found = hashing.compare({"decode/step.py": A}, {"ssd/step.py": C})
    assert found == hashing.Comparison((), ("ssd/step.py",), ("decode/step.py",), ())


def test_swapping_two_files_contents_is_a_change_to_both():
    found = hashing.compare({"x.py": A, "y.py": B}, {"x.py": B, "y.py": A})
    assert found == hashing.Comparison(("x.py", "y.py"), (), (), ())


def test_identical_files_pair_one_to_one_and_by_name_first():
    # three empty __init__.py recorded, two of them moved and one new file of the same content
    recorded = {"decode/__init__.py": E, "old/__init__.py": E, "old/x.py": A}
    now = {"layers/__init__.py": E, "new/__init__.py": E, "new/empty.py": E, "new/x.py": A}
    found = hashing.compare(recorded, now)
    assert found.moved == (("decode/__init__.py", "layers/__init__.py"),
                           ("old/__init__.py", "new/__init__.py"), ("old/x.py", "new/x.py"))
    # the third empty file has no partner left: it is an addition
    assert (found.changed, found.added, found.removed) == ((), ("new/empty.py",), ())
    # one recorded copy, two current ones: one pair, one addition
    found = hashing.compare({"a/__init__.py": E}, {"b/__init__.py": E, "c/__init__.py": E})
    assert found.moved == (("a/__init__.py", "b/__init__.py"),)
    assert found.added == ("c/__init__.py",)


def test_missing_files_are_never_a_move():
    found = hashing.compare({"gone.py": hashing.MISSING}, {"other.py": hashing.MISSING})
    assert found == hashing.Comparison((), ("other.py",), ("gone.py",), ())


def _record(hashes: dict[str, str]) -> EvidenceRecord:
    when = dt.datetime(2026, 11, 30, 3, 15, 0, tzinfo=dt.timezone.utc)
    return EvidenceRecord(
        schema_version=2, id="ev-moved", kind="evidence", title="t",
        history=[{"date": when.date(), "by": "tests", "note": "n"}], claim="test-class/ssd-scan",
        experiment="ssd-vs-scan", accelerator="h200-sxm", implementation="bundled",
        kernel_hashes=hashes, machine={"gpu": "NVIDIA H200"}, verdict="confirmed",
        command="flopkb verify --gpu", timestamp=when, **stored_ratio("confirmed", "2-8x"),
    )


def _info(root, experiment: str):
    kb, _ = load_kb(root)
    return kb.catalogue().get(experiment)


def _kb_with_quadratic_moved(tmp_path):
    """(KB root, its kernels/ssd) with the bundled kernels, ssd-vs-scan evidence hashing them,
    and ssd/quadratic.py since renamed masked_quadratic.py, unchanged."""
    root = write_kb(tmp_path)
    shutil.copytree(bundled_root() / "kernels", root / "kernels",
                    ignore=shutil.ignore_patterns("__pycache__"))
    ev_io.write_evidence(_record(hashing.current_hashes(root, _info(root, "ssd-vs-scan"))),
                         root / "records" / "evidence")
    ssd = root / "kernels" / "ssd"
    (ssd / "quadratic.py").rename(ssd / "masked_quadratic.py")
    return root, ssd


def test_evidence_survives_a_kernel_moved_within_a_hashed_folder(tmp_path):
    root, ssd = _kb_with_quadratic_moved(tmp_path)
    kb, _ = load_kb(root)
    assert hashing.stale_evidence(kb) == []
    # the same move with one byte changed is stale, and says what was removed and added
    (ssd / "masked_quadratic.py").write_text((ssd / "masked_quadratic.py").read_text() + "#\n")
    kb, _ = load_kb(root)
    [stale] = hashing.stale_evidence(kb)
    assert (stale.added, stale.removed, stale.moved) == (
        ("ssd/masked_quadratic.py",), ("ssd/quadratic.py",), ())


def test_a_stale_record_lists_its_moves_beside_the_change(tmp_path):
    root, ssd = _kb_with_quadratic_moved(tmp_path)
    (ssd / "cost.py").write_text("# changed\n")
    kb, _ = load_kb(root)
    [stale] = hashing.stale_evidence(kb)
    assert stale.changed == ("ssd/cost.py",)
    assert stale.moved == (("ssd/quadratic.py", "ssd/masked_quadratic.py"),)
    assert stale.describe() == ("changed: ssd/cost.py; moved, same content: ssd/quadratic.py -> "
                                "ssd/masked_quadratic.py")
