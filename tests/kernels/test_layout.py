"""The shape every operator folder of kernels/ takes (kernels/README.md): a README, a PyTorch
reference and a cost module; kernel code imports only torch, triton, its own siblings and
`flopkb.verify.errors`, never the run machinery; and no import circle among the modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flopkb.kernelpkg import kernels_dir

KERNELS = kernels_dir()
OPS = sorted(p.name for p in KERNELS.iterdir() if p.is_dir() and p.name != "__pycache__")
# not an operator: the serving experiments' sublayers, built from the ops' kernels
NOT_OPS = {"layers"}
# what code below kernels/ may import beyond the standard library and its siblings
ALLOWED = {"torch", "triton", "flopkb.verify.errors", "fla"}


def _imports(path: Path) -> tuple[list[str], list[tuple[int, str]]]:
    """(absolute imports, (level, module) of relative imports) of one file, at any depth."""
    absolute, relative = [], []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            absolute += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = node.module or ""
                relative += [(node.level, f"{base}.{a.name}" if base else a.name)
                             for a in node.names]
            else:
                absolute.append(node.module or "")
    return absolute, relative


def test_the_op_folders_are_the_expected_ones():
    assert {"ssd", "selective_scan", "attention", "gemm", "reduction", "mla", "moe"} <= set(OPS)
    assert "decode" not in OPS


@pytest.mark.parametrize("op", [o for o in OPS if o not in NOT_OPS])
def test_every_op_has_readme_reference_and_cost(op):
    folder = KERNELS / op
    missing = [n for n in ("README.md", "reference.py", "cost.py") if not (folder / n).is_file()]
    assert not missing, f"kernels/{op}/ lacks {missing}"


def test_kernel_code_imports_no_run_machinery():
    import sys

    stdlib = sys.stdlib_module_names
    bad = []
    for path in sorted(KERNELS.rglob("*.py")):
        absolute, _ = _imports(path)
        for name in absolute:
            top = name.split(".")[0]
            if top in stdlib or top == "__future__":
                continue
            if not any(name == a or name.startswith(a + ".") for a in ALLOWED):
                bad.append(f"{path.relative_to(KERNELS)}: {name}")
    assert bad == []


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(KERNELS).with_suffix("").parts)


def _targets(path: Path, modules: set[str]) -> set[str]:
    """Modules of kernels/ that `path` imports relatively (a name that is a module counts as
    that module, any other name as the module it comes from)."""
    package = _module_of(path).split(".")[:-1]
    out = set()
    for level, dotted in _imports(path)[1]:
        base = package[: len(package) - (level - 1)]
        full = ".".join([*base, dotted]) if base else dotted
        while full and full not in modules:
            full = full.rpartition(".")[0]
        if full:
            out.add(full)
    return out


def test_no_import_circle_among_kernel_modules():
    paths = [p for p in KERNELS.rglob("*.py") if p.name != "__init__.py"]
    modules = {_module_of(p) for p in paths}
    graph = {_module_of(p): _targets(p, modules) - {_module_of(p)} for p in paths}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*trail[trail.index(nxt):], nxt] if nxt in trail else [node, nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert circles == []
    # the import that used to close the SSD circle runs one way now
    assert "ssd.backward" in graph["ssd.chunked"] and "ssd.chunked" not in graph["ssd.backward"]
