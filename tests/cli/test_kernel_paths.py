"""A declaration's `kernels:` entries stay inside kernels/ (issue 27): a `../` chain made
validate hash every source file under `/` (43-60 s, outside paths in its messages), and an entry
longer than a file name can be gave FKB199 in validate and exit 2 in `claims`, `graph status`
and `graph why`. Now each is a located FKB530 at its entry, and nothing outside is read."""

from __future__ import annotations

import json
import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import time
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.evidence.hashing import current_hashes, kernel_files
from flopkb.kb import load_kb
from flopkb.kernelpkg import MAX_KERNEL_ENTRIES, MAX_KERNEL_ENTRY_CHARS
from tests.unit.verify.test_generic import example_evidence

EXPERIMENT = "rmsnorm-fused-vs-unfused"
cli = CliRunner()


@pytest.fixture(scope="module")
def evidence_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example KB with one confirmed evidence record (so validate hashes its kernels)."""
    root, _ = example_evidence(tmp_path_factory.mktemp("kernel-paths"))
    return root


@pytest.fixture
def kb(evidence_kb: Path, tmp_path: Path) -> Path:
    """A fresh copy of `evidence_kb` to change."""
    import shutil

    root = tmp_path / "kb"
    shutil.copytree(evidence_kb, root, symlinks=True)
    return root


def _declare(root: Path, kernels: list[str]) -> Path:
    path = root / "experiments" / f"{EXPERIMENT}.yaml"
    data = yaml.safe_load(path.read_text())
    data["kernels"] = kernels
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=10_000))
    return path


def _validate(root: Path) -> tuple[int, list[dict], str]:
    result = cli.invoke(app, ["--kb", str(root), "validate", "--format", "json"])
    return result.exit_code, json.loads(result.stdout)["errors"], result.output


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("entry", ["../../../../../../../../", "../kernels/rmsnorm/",
                                   "/etc/", "rmsnorm/../../records/", ".hidden/"])
def test_an_entry_leaving_kernels_is_a_located_finding_and_nothing_outside_is_read(
        kb: Path, entry: str) -> None:
    path = _declare(kb, ["rmsnorm/", entry])
    start = time.monotonic()
    code, errors, output = _validate(kb)
    assert time.monotonic() - start < 20
    assert code == 1
    found = [e for e in errors if e["rule"] == "FKB530"]
    assert len(found) == 1 and found[0]["record"] == EXPERIMENT, errors
    assert found[0]["line"] == _line_of(path, entry) and found[0]["column"] > 1
    assert not [e for e in errors if e["rule"] == "FKB199"], errors
    # no path outside the KB reaches a message
    assert "/usr/" not in output and "/proc" not in output


def test_an_entry_longer_than_a_file_name_never_takes_a_command_down(kb: Path) -> None:
    _declare(kb, ["rmsnorm/", "a" * 300])
    code, errors, _ = _validate(kb)
    assert code == 1 and not [e for e in errors if e["rule"] == "FKB199"], errors
    (found,) = [e for e in errors if e["rule"] == "FKB530"]
    assert f"at most {MAX_KERNEL_ENTRY_CHARS}" in found["message"]
    assert len(found["message"]) < 300
    for args in (["claims"], ["graph", "status"], ["graph", "why", "fused-rmsnorm"]):
        result = cli.invoke(app, ["--kb", str(kb), *args])
        assert result.exit_code in (0, 1), (args, result.output)
        assert "Traceback" not in result.output and "File name too long" not in result.output


def test_too_many_entries_are_one_finding(kb: Path) -> None:
    _declare(kb, [f"rmsnorm/f{i}.py" for i in range(MAX_KERNEL_ENTRIES + 1)])
    _, errors, _ = _validate(kb)
    assert [e["message"] for e in errors if e["rule"] == "FKB530"] == [
        f"{MAX_KERNEL_ENTRIES + 1} kernels entries; at most {MAX_KERNEL_ENTRIES}"]


def test_links_leading_out_of_kernels_are_findings_and_never_hashed(kb: Path,
                                                                    tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 1\n")
    (kb / "kernels" / "rmsnorm" / "leak.py").symlink_to(outside / "secret.py")
    (kb / "kernels" / "linked").symlink_to(outside, target_is_directory=True)
    _declare(kb, ["rmsnorm/", "linked/", "rmsnorm/leak.py"])
    _, errors, _ = _validate(kb)
    messages = sorted(e["message"] for e in errors if e["rule"] == "FKB530")
    assert len(messages) == 3, messages
    assert all("never read" in m for m in messages)
    assert any("'rmsnorm/leak.py'" in m for m in messages)


def test_hashing_never_reads_outside_even_for_an_unchecked_declaration(kb: Path,
                                                                       tmp_path: Path) -> None:
    """kernel_files holds on its own: a declaration that skipped the checks (a forged
    ExperimentInfo) still hashes nothing outside the KB's or the bundled kernels/."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 1\n")
    (kb / "kernels" / "rmsnorm" / "leak.py").symlink_to(outside / "secret.py")
    (kb / "kernels" / "linked").symlink_to(outside, target_is_directory=True)
    loaded, _ = load_kb(kb)
    info = loaded.catalogue().get(EXPERIMENT)
    forged = replace(info, kernels=("rmsnorm/", "linked/", "../../", "/etc/passwd",
                                    "x" * 5000, "rmsnorm/leak.py"))
    files = dict(kernel_files(kb, forged))
    assert set(files) == {"rmsnorm/__init__.py", "rmsnorm/fused.py", "rmsnorm/reference.py"}
    kernels = (kb / "kernels").resolve()
    assert all(p.resolve().is_relative_to(kernels) for p in files.values())
    assert set(current_hashes(kb, forged)) == set(files)
