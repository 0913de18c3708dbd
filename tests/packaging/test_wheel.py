"""The wheel carries the bundled KB (records, schema, kernels, experiments) and never claims
`kernels`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_carries_bundled_kb(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(REPO)],
        check=True,
    )
    (wheel,) = tmp_path.glob("flopkb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    records = {n for n in names if n.startswith("flopkb/_kb/records/") and n.endswith(".yaml")}
    committed = {p for p in (REPO / "records").rglob("*.yaml")}
    assert len(records) == len(committed) > 0
    assert any(n.startswith("flopkb/_kb/schema/") and n.endswith(".json") for n in names)
    assert "flopkb/_kb/kernels/__init__.py" in names
    # the bundled experiment declarations travel with the kernels they run
    declared = {n for n in names if n.startswith("flopkb/_kb/experiments/") and n.endswith(".yaml")}
    assert len(declared) == len(list((REPO / "experiments").glob("*.yaml"))) > 0
    # The generic top-level name `kernels` belongs to another PyPI project.
    assert not any(n.startswith("kernels/") for n in names)
