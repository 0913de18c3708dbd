"""The located loader: hostile bytes become findings, values follow the YAML 1.2 core schema."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flopkb.kb import load_files, load_kb, record_files
from flopkb.load import Limits, locate, read_document
from flopkb.load.yamlfile import _depth_prescan

CASES = Path(__file__).resolve().parents[2] / "cases"


def _doc(tmp_path: Path, content: str | bytes, limits: Limits = Limits()):  # noqa: B008
    path = tmp_path / "x.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return read_document(path, "x.yaml", limits)


def _codes(doc) -> list[tuple[str, int, int]]:
    return [(f.rule, f.line, f.column) for f in doc.findings]


def test_core_schema_resolution(tmp_path: Path) -> None:
    doc = _doc(
        tmp_path,
        "a: no\nb: on\nc: 3:1\nd: 2026-10-05\ne: 1e3\nf: 0x10\ng: ~\nh: true\ni: '7'\nj: 7\n"
        "k: 1_000\n"
        "l: -2.5\nm: .5\nn:\n",
    )
    assert doc.findings == []
    assert doc.data == {
        "a": "no", "b": "on", "c": "3:1", "d": "2026-10-05", "e": 1000.0, "f": 16, "g": None,
        "h": True, "i": "7", "j": 7, "k": "1_000", "l": -2.5, "m": 0.5, "n": None,
    }  # fmt: skip


def test_crlf_and_bom_are_accepted(tmp_path: Path) -> None:
    doc = _doc(tmp_path, b"\xef\xbb\xbfa: 1\r\nb:\r\n  - x\r\n")
    assert doc.findings == []
    assert doc.data == {"a": 1, "b": ["x"]}
    assert locate(doc.node, ("b", 0)) == (3, 5)


def test_duplicate_key_is_located_at_the_second(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "a: 1\nb:\n  c: 1\n  c: 2\n")
    assert _codes(doc) == [("FKB106", 4, 3)]
    assert doc.data is None
    assert "first on line 3" in doc.findings[0].message


@pytest.mark.parametrize(
    ("content", "finding"),
    [
        (b"a: 1\nb: caf\xc3\xa9 \xff\n", ("FKB103", 2, 9)),
        (b"a: 1\n  \x00\n", ("FKB104", 2, 3)),
        (b"a: \x1b[31m\n", ("FKB104", 1, 4)),
        (b"", ("FKB110", 1, 1)),
        (b"# only a comment\n", ("FKB110", 1, 1)),
        (b"- a\n", ("FKB111", 1, 1)),
        (b"just text\n", ("FKB111", 1, 1)),
        (b"a: [1\n", ("FKB105", 2, 1)),
        (b"a: !!binary aGk=\n", ("FKB108", 1, 4)),
        (b"a: !!set {x}\n", ("FKB108", 1, 4)),
        (b"a: !!int abc\n", ("FKB108", 1, 4)),
        (b"a: .inf\n", ("FKB113", 1, 4)),
        (b"? {a: 1}\n: x\n", ("FKB112", 1, 3)),
    ],
)
def test_hostile_bytes_become_located_findings(
    tmp_path: Path, content: bytes, finding: tuple
) -> None:
    assert _codes(_doc(tmp_path, content)) == [finding]


def test_python_tag_is_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    doc = _doc(tmp_path, f'a: !!python/object/apply:os.system ["touch {marker}"]\n')
    assert [f.rule for f in doc.findings] == ["FKB108"]
    assert not marker.exists()


def test_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 20)]
    # CPU time of this process, not wall time: a loaded machine does not count; the bomb expanded
    # would be 10^20 nodes, so any bound that holds here with headroom tells the two apart
    start = time.process_time()
    doc = _doc(tmp_path, "\n".join(lines) + "\n")
    assert time.process_time() - start < 5
    assert doc.data is None
    assert {f.rule for f in doc.findings} == {"FKB107"}
    assert len(doc.findings) == 20 + 19  # one per anchor name, one per alias name


@pytest.mark.parametrize(
    "text", ["a: " + "[" * 100_000 + "]" * 100_000, "a:\n  " + "- " * 100_000 + "x"]
)
def test_absurd_nesting_never_crashes(tmp_path: Path, text: str) -> None:
    assert [f.rule for f in _doc(tmp_path, text + "\n").findings] == ["FKB109"]


def test_depth_limit_is_configurable(tmp_path: Path) -> None:
    text = "a: [[[[1]]]]\n"
    assert _doc(tmp_path, text).findings == []
    assert [f.rule for f in _doc(tmp_path, text, Limits(max_depth=3)).findings] == ["FKB109"]


def test_depth_prescan_bounds_nesting_without_libyaml() -> None:
    assert _depth_prescan("a: [1]\nb:\n  - c\n", 64) is None
    assert _depth_prescan("a: 1\nb: " + "[" * 100 + "\n", 64) == (2, 1)
    assert _depth_prescan("- " * 200 + "x\n", 64) == (1, 1)


def test_size_limit(tmp_path: Path) -> None:
    assert _codes(_doc(tmp_path, "a: " + "x" * 100 + "\n", Limits(max_bytes=50))) == [
        ("FKB102", 0, 0)
    ]


def test_unreadable_file(tmp_path: Path) -> None:
    folder = tmp_path / "dir.yaml"
    folder.mkdir()
    assert [f.rule for f in read_document(folder, "dir.yaml").findings] == ["FKB101"]


def test_locate_points_at_keys_items_and_nearest_parent(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "a:\n  b: [x, {c: 1}]\n  d: 2\n")
    assert locate(doc.node, ("a", "b", 1, "c")) == (2, 11)
    assert locate(doc.node, ("a", "d")) == (3, 3)
    assert locate(doc.node, ("a", "missing", 3)) == (1, 1)
    assert locate(doc.node, ("a", "b", 7)) == (2, 3)
    assert locate(None, ("a",)) == (1, 1)


def test_one_broken_file_hides_nothing(tmp_path: Path) -> None:
    base = CASES / "valid" / "small-kb"
    files = record_files(base)
    broken = tmp_path / "broken.yaml"
    broken.write_bytes(b"a: \xff\n")
    kb, findings = load_files([broken, *files])
    assert [f.rule for f in findings] == ["FKB103"]
    assert len(kb.records) == len(files)
    assert "broken" in kb.unloaded


def test_parallel_load_equals_serial(monkeypatch: pytest.MonkeyPatch) -> None:
    root = CASES / "valid" / "small-kb"
    serial_kb, serial = load_kb(root)
    monkeypatch.setattr("flopkb.kb.PARALLEL_MIN_FILES", 1)
    monkeypatch.setenv("FLOPKB_WORKERS", "2")
    parallel_kb, parallel = load_kb(root)
    assert serial == parallel
    assert serial_kb.records == parallel_kb.records
    assert serial_kb.where("mamba2-ssd", "flop", "hardware_parameters", 1, "magnitude") == (
        parallel_kb.where("mamba2-ssd", "flop", "hardware_parameters", 1, "magnitude")
    )
