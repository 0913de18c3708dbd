"""Every kernel source an experiment runs is hashed into its evidence: the files its declaration's
`kernels:` list names import (relative imports inside kernels/, followed to the end) no file that
the list leaves out, so a change to a helper module stales the evidence it fed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flopkb.evidence import catalogue, hashing
from flopkb.evidence.declared import ExperimentInfo
from flopkb.kernelpkg import kernels_dir

# Declarations whose hashed files import a file their list leaves out, as committed evidence
# recorded them: adding the file to `kernels:` changes the recorded hash map, so each is mended
# together with the next GPU run of that experiment, then taken out of here.
KNOWN_GAPS: dict[str, set[str]] = {
    "calibration": {"gemm/_checks.py"},
}


def relative_imports(path: Path, root: Path) -> set[Path]:
    """The files below `root` that the Python file `path` imports relatively, at any depth."""
    found: set[Path] = set()
    if path.suffix != ".py":
        return found
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        target = base.joinpath(*node.module.split(".")) if node.module else base
        candidates = [target.with_suffix(".py"), target / "__init__.py"] if node.module else []
        candidates += [c for a in node.names
                       for c in (target / f"{a.name}.py", target / a.name / "__init__.py")]
        found.update(c for c in candidates if c.is_file() and c.is_relative_to(root))
    return found


def uncovered(info: ExperimentInfo) -> set[str]:
    root = kernels_dir()
    hashed = {file.resolve() for _, file in hashing.kernel_files(None, info)}
    seen: set[Path] = set()
    todo = [f for f in hashed if f.is_file()]
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo.extend(p.resolve() for p in relative_imports(file, root.resolve()))
    return {f.relative_to(root.resolve()).as_posix() for f in seen - hashed
            if f.name != "__init__.py"}


@pytest.mark.parametrize("name", sorted(catalogue.bundled().experiments))
def test_every_file_an_experiment_imports_is_hashed(name: str) -> None:
    info = catalogue.bundled().get(name)
    assert uncovered(info) == KNOWN_GAPS.get(name, set())


def test_the_walk_follows_imports_past_the_list(tmp_path: Path) -> None:
    # the analysis itself: `from ._checks import x` and `from .. import _platform` are found
    (tmp_path / "op").mkdir()
    (tmp_path / "op" / "fwd.py").write_text("from ._checks import x\nfrom .. import _platform\n")
    (tmp_path / "op" / "_checks.py").write_text("x = 1\n")
    (tmp_path / "_platform.py").write_text("")
    assert relative_imports(tmp_path / "op" / "fwd.py", tmp_path) == {
        tmp_path / "op" / "_checks.py", tmp_path / "_platform.py"}
