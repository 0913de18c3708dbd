"""One write rule for every command that writes: regular files only, --force to replace,
--follow-symlinks to write through a link, nothing into the KB's records/ but evidence."""

from __future__ import annotations

import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.atomic import UnsafeTarget, WritePolicy, atomic_path, check_target, writing
from flopkb.cli import app

GRAPH_KB = Path(__file__).resolve().parents[1] / "fixtures" / "graph_kb"
runner = CliRunner()


def _export(out: Path, *extra: str, kb: Path = GRAPH_KB):
    return runner.invoke(app, ["--kb", str(kb), "graph", "export", "--out", str(out), *extra])


def _render(out: Path, *extra: str, kb: Path = GRAPH_KB):
    pytest.importorskip("matplotlib")
    args = ["--kb", str(kb), "graph", "render", str(out), "--engine", "matplotlib", *extra]
    return runner.invoke(app, args)


def _schema(out: Path, *extra: str, kb: Path = GRAPH_KB):
    # schema export writes a folder: `out` is one of the files it writes there
    args = ["--kb", str(kb), "schema", "export", "--out", str(out.parent), *extra]
    return runner.invoke(app, args)


# (command, the file it writes given a target path)
WRITERS: dict[str, tuple[Callable, str]] = {
    "graph export": (_export, "out.json"),
    "graph render": (_render, "out.svg"),
    "schema export": (_schema, "record.schema.json"),
}


def _refused(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopkb: error: refused: "), result.stderr
    for word in words:
        assert word in lines[0]


@pytest.fixture(params=sorted(WRITERS))
def writer(request: pytest.FixtureRequest) -> tuple[Callable, str]:
    return WRITERS[request.param]


def test_a_fifo_is_never_replaced(tmp_path: Path, writer: tuple[Callable, str]) -> None:
    run, name = writer
    target = tmp_path / name
    os.mkfifo(target)
    _refused(run(target), "FIFO")
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_socket_is_never_replaced(tmp_path: Path, writer: tuple[Callable, str]) -> None:
    run, name = writer
    target = tmp_path / name
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(target))
        _refused(run(target), "socket")
        assert stat.S_ISSOCK(os.lstat(target).st_mode)
    finally:
        server.close()


def test_a_device_is_never_replaced(tmp_path: Path, writer: tuple[Callable, str]) -> None:
    run, name = writer
    target = tmp_path / name
    try:
        # a null device of our own: as root, the old code replaced /dev/null itself
        os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("no CAP_MKNOD here (the /dev/null check below still runs)")
    _refused(run(target, "--force"), "character device")
    assert stat.S_ISCHR(os.lstat(target).st_mode)


def test_dev_null_is_refused_before_anything_is_written() -> None:
    for policy in (WritePolicy(), WritePolicy(force=True, follow_symlinks=True)):
        with pytest.raises(UnsafeTarget, match="character device"):
            check_target(Path("/dev/null"), policy)


def test_an_existing_file_is_replaced_only_with_force(
    tmp_path: Path, writer: tuple[Callable, str]
) -> None:
    run, name = writer
    target = tmp_path / name
    target.write_text("mine\n")
    _refused(run(target), "exists", "--force")
    assert target.read_text() == "mine\n"
    assert run(target, "--force").exit_code == 0
    assert target.read_text() != "mine\n"
    # and nothing else is left in the folder (no temp file)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_symlink_is_written_through_only_when_asked(
    tmp_path: Path, writer: tuple[Callable, str]
) -> None:
    run, name = writer
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / name
    link.symlink_to(real / name)  # dangling: following it creates the target
    _refused(run(link), "symlink", "--follow-symlinks")
    assert not (real / name).exists()
    assert run(link, "--follow-symlinks").exit_code == 0
    assert link.is_symlink() and (real / name).stat().st_size > 0
    # an existing target behind the link is still an existing file: --force as well
    _refused(run(link, "--follow-symlinks"), "exists")
    assert run(link, "--follow-symlinks", "--force").exit_code == 0
    assert link.is_symlink()


def test_nothing_is_written_into_records(tmp_path: Path, writer: tuple[Callable, str]) -> None:
    run, name = writer
    kb = tmp_path / "kb"
    shutil.copytree(GRAPH_KB, kb)
    target = kb / "records" / "classes" / name
    # a stray file in records/ would break the KB's next load: --force does not change that
    _refused(run(target, "--force", kb=kb), "records")
    assert not target.exists()
    # outside its records/, the KB's folder is a fine place for an output
    assert run(kb / name, kb=kb).exit_code == 0


def test_schema_export_writes_all_or_nothing(tmp_path: Path) -> None:
    out = tmp_path / "schema"
    out.mkdir()
    (out / "record.schema.json").write_text("{}")
    _refused(_schema(out / "x"), "exists")
    # one existing file refuses the export before any other file is written
    assert [p.name for p in out.iterdir()] == ["record.schema.json"]


def test_verify_refuses_a_bad_evidence_folder(tmp_path: Path) -> None:
    fifo = tmp_path / "evidence"
    os.mkfifo(fifo)
    result = runner.invoke(app, ["--kb", str(GRAPH_KB), "verify", "--gpu", "--out", str(fifo)])
    _refused(result, "FIFO")
    link = tmp_path / "ev-link"
    link.symlink_to(tmp_path)
    result = runner.invoke(app, ["--kb", str(GRAPH_KB), "verify", "--gpu", "--out", str(link)])
    _refused(result, "symlink", "--follow-symlinks")


def test_a_name_taken_during_the_write_is_not_clobbered(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    with pytest.raises(UnsafeTarget, match="exists"), atomic_path(target) as tmp:
        tmp.write_text("new\n")
        target.write_text("appeared meanwhile\n")  # after the check, before the publish
    assert target.read_text() == "appeared meanwhile\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_forced_publish_never_renames_over_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    with (
        writing(WritePolicy(force=True)),
        pytest.raises(UnsafeTarget, match="changed"),
        atomic_path(target) as tmp,
    ):
        tmp.write_text("new\n")
        target.unlink()
        os.mkfifo(target)  # swapped in after the check
    assert stat.S_ISFIFO(os.lstat(target).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
