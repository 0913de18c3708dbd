"""bench/README.md's table names every script of bench/ (one-off measurements: a script the table
does not name is one nobody can find the purpose of)."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
# what every script imports, not a measurement
SHARED = {"common.py"}


def test_the_readme_table_names_every_script() -> None:
    lines = (BENCH / "README.md").read_text(encoding="utf-8").splitlines()
    # the first cell of each table row: `script.py` (or two scripts of one measurement)
    cells = [line.split("|")[1] for line in lines if line.startswith("| `")]
    named = {name for cell in cells for name in re.findall(r"`([\w.]+\.(?:py|sh))`", cell)}
    scripts = {p.name for p in BENCH.iterdir() if p.suffix in {".py", ".sh"}} - SHARED
    assert sorted(scripts - named) == []
