"""docs/where-things-go.md is a map of the tree as it is: every top-level folder and every module
of flopkb/ is named in it, what it names exists (the paths of every page:
tests/docs/test_links.py), its flopkb/ table runs bottom to top in the package's layers
(tests/unit/test_layers.py), and README points newcomers to it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_layers import LAYERS, _layer

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "where-things-go.md"
CODE = re.compile(r"`([^`\n]+)`")


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _first_cells(section: str) -> list[str]:
    """The backticked names of each table row's first cell (header and rule rows skipped)."""
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return [CODE.findall(row.split("|")[1])[0] for row in rows]


def _tracked_top_folders() -> set[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: the tracked folders are unknown")
    return {line.split("/")[0] + "/" for line in out.splitlines()
            if "/" in line and not line.startswith(".")}


def _flopkb_modules() -> set[str]:
    """flopkb's top-level modules and its packages, as the page names them."""
    package = ROOT / "flopkb"
    modules = {f"flopkb/{p.name}" for p in package.glob("*.py") if p.name != "__init__.py"}
    packages = {f"flopkb/{p.parent.name}/" for p in package.glob("*/__init__.py")}
    return modules | packages


def _module_name(path: str) -> str:
    return path.removesuffix("/").removesuffix(".py").replace("/", ".")


def test_every_top_level_folder_is_on_the_map() -> None:
    named = set(_first_cells(_section("The top-level folders")))
    assert named == _tracked_top_folders()


def test_every_module_of_flopkb_is_on_the_map_once() -> None:
    table = _section("Inside flopkb/, bottom to top")
    rows = [line for line in table.splitlines() if line.startswith("| ") and "`flopkb/" in line]
    named = [path for row in rows for path in CODE.findall(row.split("|")[2])]
    assert len(named) == len(set(named))
    assert set(named) == _flopkb_modules()


def test_the_flopkb_table_runs_in_the_order_of_the_layers() -> None:
    table = _section("Inside flopkb/, bottom to top")
    rows = [line.split("|") for line in table.splitlines()
            if line.startswith("| ") and "`flopkb/" in line]
    names = [name for name, _ in LAYERS]
    assert [row[1].strip() for row in rows] == [n for n in names if n != "kernels"]
    for row in rows:
        layer = names.index(row[1].strip())
        assert {_layer(_module_name(p)) for p in CODE.findall(row[2])} == {layer}, row[1]


def test_every_kind_of_new_thing_points_at_a_folder_that_exists() -> None:
    section = _section("Adding something")
    rows = [line.split("|") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| a new")]
    assert {"experiment", "kernel (an operator)", "rule", "command"} <= {
        row[1].strip() for row in rows}
    for row in rows:
        places = [p for p in CODE.findall(row[2]) if "/" in p]
        assert places, f"{row[1].strip()}: no place named"
        for place in places:
            # `kernels/<op>/`: the folder before the first placeholder exists
            fixed = place.split("<")[0].rsplit("/", 1)[0] if "<" in place else place
            assert (ROOT / fixed).exists(), place


def test_readme_points_to_the_map() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/where-things-go.md)" in readme
