"""Install hints name the extra's own requirements, never `pip install flopkb[...]` (no package
index carries flopkb)."""

from __future__ import annotations

from pathlib import Path

from flopkb.config import tomllib
from flopkb.extras import extra_requirements, install_hint

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

REQUIRES = [
    "typer>=0.12",
    "tomli>=1.1; python_version < '3.11'",
    "numpy>=1.26; extra == 'kernels'",
    "torch>=2.4; extra == 'kernels'",
    'triton<4,>=3.2; extra == "kernels"',
    "matplotlib>=3.8; extra == 'plot'",
]


def test_the_requirements_of_one_extra() -> None:
    kernels = extra_requirements("kernels", REQUIRES)
    assert kernels == ["numpy>=1.26", "torch>=2.4", "triton<4,>=3.2"]
    assert install_hint("plot", REQUIRES) == "pip install 'matplotlib>=3.8'"


def test_an_extra_the_metadata_does_not_know_points_at_the_clone() -> None:
    assert install_hint("kernels", []) == "in the flopkb clone: pip install -e '.[kernels]'"


def test_the_installed_metadata_agrees_with_pyproject() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["kernels"]
    names = sorted(r.split(">")[0].split("<")[0] for r in declared)
    installed = sorted(r.split(">")[0].split("<")[0] for r in extra_requirements("kernels"))
    assert installed == names
    assert "flopkb" not in install_hint("kernels")
