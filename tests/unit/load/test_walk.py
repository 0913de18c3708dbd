"""The filesystem walk and the record reader refuse what is not a regular file inside the KB.

FIFOs, sockets, devices, links out of the KB, unreadable folders and a walk without bound are
things git cannot hold, so each case is built here in a temporary copy of the small valid KB.
Tests run as root in CI, where chmod cannot make anything unreadable: there the denial is
simulated by making `os.scandir` / `os.open` raise PermissionError, and done for real otherwise.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flopkb.kb import load_kb
from flopkb.load import read_document
from flopkb.load.safefile import RefusedFile, read_regular
from flopkb.load.walk import WalkLimits, walk_records
from flopkb.validate import validate

SMALL_KB = Path(__file__).resolve().parents[2] / "cases" / "valid" / "small-kb"
REPO = Path(__file__).resolve().parents[3]
SECRET = "TOPSECRET-7d1f"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    shutil.copytree(SMALL_KB, tmp_path / "kb")
    return tmp_path / "kb"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the KB whose text would show in findings if it were ever read."""
    path = tmp_path / "secret.yaml"
    path.write_text(f"{SECRET}: {SECRET}\nkind: {SECRET}\n", encoding="utf-8")
    return path


def _rules(findings: list) -> list[tuple[str, str]]:
    return sorted((f.rule, Path(f.file).name) for f in findings)


def _flopkb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "flopkb", *args],
        capture_output=True, text=True, timeout=timeout, env=env, check=False,
    )  # fmt: skip


def test_a_fifo_is_a_finding_and_never_opened(kb: Path) -> None:
    os.mkfifo(kb / "records/sources/pipe.yaml")
    walk = walk_records(kb)
    assert _rules(walk.findings) == [("FKB130", "pipe.yaml")]
    assert "FIFO" in walk.findings[0].message
    assert all(p.name != "pipe.yaml" for p in walk.files)
    # the other records are all still read, and the run fails on the FIFO alone
    result = validate(kb)
    assert [f.rule for f in result.errors] == ["FKB130"] and result.records == 7


def test_a_fifo_does_not_hang_the_cli(kb: Path) -> None:
    # before the walk refused FIFOs, open() on one blocked every command forever
    os.mkfifo(kb / "records/classes/x.yaml")
    for args in (("validate",), ("claims",), ("graph", "status")):
        proc = _flopkb("--kb", str(kb), *args, timeout=60)
        assert proc.returncode in (0, 1), proc.stderr
    proc = _flopkb("--kb", str(kb), "validate", "--format", "github", timeout=60)
    assert proc.returncode == 1 and "FKB130" in proc.stdout


def test_a_fifo_given_by_name_is_a_finding(kb: Path) -> None:
    fifo = kb / "records/classes/x.yaml"
    os.mkfifo(fifo)
    result = validate([fifo, kb / "records/classes/mamba2-ssd.yaml"])
    assert _rules(result.findings) == [("FKB130", "x.yaml")]
    # the reader refuses it too, whoever calls it: never opened, so never blocking
    assert [f.rule for f in read_document(fifo, "x.yaml").findings] == ["FKB130"]


def test_a_socket_is_a_finding(kb: Path) -> None:
    path = kb / "records/sources/sock.yaml"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        assert _rules(walk_records(kb).findings) == [("FKB130", "sock.yaml")]
        assert "socket" in walk_records(kb).findings[0].message
    finally:
        server.close()


def test_a_device_is_never_opened(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = os.open

    def spy(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(RefusedFile) as refused:
        read_regular("/dev/null", 10)
    assert refused.value.code == "FKB130" and "character device" in str(refused.value)
    assert opened == []
    try:
        os.mknod(kb / "records/sources/dev.yaml", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        return  # no CAP_MKNOD here: the reader's refusal above is the test
    assert _rules(walk_records(kb).findings) == [("FKB130", "dev.yaml")]


def test_a_link_out_of_the_kb_is_never_read(kb: Path, outside: Path) -> None:
    link = kb / "records/sources/leak.yaml"
    link.symlink_to(outside)
    result = validate(kb)
    assert _rules(result.findings) == [("FKB131", "leak.yaml")]
    finding = result.findings[0]
    assert finding.file.endswith("records/sources/leak.yaml")  # located at the link
    assert "outside the KB root" in finding.message
    assert result.records == 7
    # nothing of the target reaches any output, annotations included
    for fmt in ("text", "json", "github"):
        proc = _flopkb("--kb", str(kb), "validate", "--format", fmt)
        assert proc.returncode == 1
        assert SECRET not in proc.stdout + proc.stderr
    # given by name (a pre-commit hook passes the changed files): the same refusal
    named = validate([link])
    assert _rules(named.findings) == [("FKB131", "leak.yaml")]
    assert SECRET not in repr(named.findings)


def test_links_out_through_folders_are_refused(kb: Path, tmp_path: Path, outside: Path) -> None:
    (kb / "records/shared").symlink_to(outside.parent)
    walk = walk_records(kb)
    assert _rules(walk.findings) == [("FKB131", "shared")]
    # a records/ folder that is itself a link out of the KB: nothing under it is read
    other = tmp_path / "other"
    other.mkdir()
    (other / "records").symlink_to(kb / "records")
    walk = walk_records(other)
    assert walk.files == [] and _rules(walk.findings) == [("FKB131", "records")]


def test_dangling_and_looping_links(kb: Path) -> None:
    (kb / "records/sources/gone.yaml").symlink_to("nowhere.yaml")
    (kb / "records/sources/loop.yaml").symlink_to("loop.yaml")
    walk = walk_records(kb)
    assert _rules(walk.findings) == [("FKB131", "gone.yaml"), ("FKB131", "loop.yaml")]
    assert {"dangles", "loops"} == {f.message.split("; ")[0].split()[-1] for f in walk.findings}


def test_links_inside_the_kb_are_read_as_their_target(kb: Path) -> None:
    # a link to a record already in records/ is that record once, not a duplicate id
    (kb / "records/classes/alias.yaml").symlink_to("../sources/dao-gu-2024-ssd.yaml")
    # a link to a file elsewhere in the KB root is read from where it really is
    (kb / "extra").mkdir()
    shutil.move(kb / "records/quantities/hbm_bandwidth.yaml", kb / "extra/hbm_bandwidth.yaml")
    (kb / "records/quantities/hbm_bandwidth.yaml").symlink_to("../../extra/hbm_bandwidth.yaml")
    loaded, findings = load_kb(kb)
    assert [f for f in findings if f.rule.startswith("FKB1")] == []
    assert len(loaded.records) == 7
    assert loaded.files["hbm_bandwidth"] == kb / "extra/hbm_bandwidth.yaml"
    assert validate(kb).errors == []
    # a link to a folder inside the KB is a warning, not followed
    (kb / "records/more").symlink_to("../extra")
    assert _rules(walk_records(kb).findings) == [("FKB134", "more")]


def test_unreadable_folder_is_a_finding(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = str(kb / "records/sources")
    real_scandir = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = validate(kb)
    assert ("FKB132", "sources") in _rules(result.findings)
    assert "Permission denied" in next(f.message for f in result.findings if f.rule == "FKB132")


def test_unreadable_file_is_a_finding(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = str(kb / "records/sources/dao-gu-2024-ssd.yaml")
    real_open = os.open

    def deny(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    loaded, findings = load_kb(kb)
    assert ("FKB101", "dao-gu-2024-ssd.yaml") in _rules(findings)
    assert len(loaded.records) == 6


@pytest.mark.skipif(IS_ROOT, reason="root reads whatever chmod says (simulated above)")
def test_unreadable_for_real(kb: Path) -> None:  # pragma: no cover - CI runs as root
    folder, file = kb / "records/sources", kb / "records/quantities/hbm_bandwidth.yaml"
    folder.chmod(0)
    file.chmod(0)
    try:
        rules = _rules(validate(kb).findings)
    finally:
        folder.chmod(0o755)
        file.chmod(0o644)
    assert ("FKB132", "sources") in rules and ("FKB101", "hbm_bandwidth.yaml") in rules


def test_a_path_swapped_after_the_check_is_not_followed(
    kb: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the check (lstat) saw a regular file; by the open, a link out or a FIFO stands there
    checked = os.lstat(kb / "records/sources/dao-gu-2024-ssd.yaml")
    monkeypatch.setattr(os, "lstat", lambda *a, **k: checked)
    link, fifo = kb / "link.yaml", kb / "fifo.yaml"
    link.symlink_to(outside)
    os.mkfifo(fifo)
    with pytest.raises(RefusedFile) as refused:
        read_regular(link, 1 << 20)
    assert refused.value.code == "FKB131"
    with pytest.raises(RefusedFile) as refused:
        read_regular(fifo, 1 << 20)  # O_NONBLOCK: returns at once, then fstat refuses it
    assert refused.value.code == "FKB130"
    # another regular file swapped in (say, through a swapped folder) is not the checked file
    with pytest.raises(RefusedFile):
        read_regular(outside, 1 << 20)


def test_the_walk_is_bounded(kb: Path) -> None:
    walk = walk_records(kb, WalkLimits(max_entries=5))
    assert walk.files == [] and [f.rule for f in walk.findings] == ["FKB133"]
    deep = kb / "records/a/b/c"
    deep.mkdir(parents=True)
    shutil.copy(kb / "records/sources/dao-gu-2024-ssd.yaml", deep / "x.yaml")
    walk = walk_records(kb, WalkLimits(max_depth=2))
    assert _rules(walk.findings) == [("FKB133", "c")]
    assert len(walk.files) == 7  # x.yaml, 3 levels down, is not read


def test_kb_at_the_filesystem_root_does_not_walk_the_disk() -> None:
    # loose bounds: 10^5 entries take about a second; the whole disk took minutes. CPU time
    # (user + system, where the walk's syscalls count), not wall time: a loaded machine does not
    # count, and the child's is read from its rusage once it is reaped
    started = time.process_time()
    loaded, findings = load_kb(Path("/"))
    assert [f.rule for f in findings] == ["FKB133"] and loaded.records == {}
    assert [f.rule for f in validate("/").findings] == ["FKB133"]
    assert time.process_time() - started < 30
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = _flopkb("--kb", "/", "validate", timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # 1: the walk's finding; 2: a discovery that refuses a KB without records/ outright
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    child = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert child < 30
