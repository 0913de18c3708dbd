"""The package's layers: the static import graph of flopkb/ and kernels/ (every import statement,
at module level, inside functions and under TYPE_CHECKING) has no circle and no arrow from a
layer up to a higher one; and `flopkb validate` (the library call and the CLI) loads neither
torch nor the modules of `flopkb.verify` that run experiments."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[2]
# Bottom to top: a module imports from its own layer or those below it. `flopkb` alone is the
# package root (its version); a name is a module or a package and everything below it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundations", ("flopkb", "flopkb.budget", "flopkb.findings", "flopkb.rules",
                     "flopkb.escape", "flopkb.plural", "flopkb.extras", "flopkb.config",
                     "flopkb.paths", "flopkb.kernelpkg", "flopkb.grammar")),
    # the pydantic records; reading a file turns YAML into them, so `load` sits above `model`
    ("model", ("flopkb.model",)),
    # KB files read (bounded, located, with inline suppressions) and written (atomically, with
    # the schema header line)
    ("files", ("flopkb.load", "flopkb.atomic", "flopkb.suppression", "flopkb.schema_export",
               "flopkb.scaffold")),
    ("evidence", ("flopkb.evidence",)),
    # the bundled KB as a source of records to copy (`flopkb add`), and what a change feeds
    ("kb", ("flopkb.kb", "flopkb.bundle", "flopkb.feeds")),
    ("hardware", ("flopkb.hardware",)),
    ("architecture", ("flopkb.architecture",)),
    ("claims", ("flopkb.claims",)),
    ("graph", ("flopkb.graph",)),
    ("check", ("flopkb.check",)),
    ("validate", ("flopkb.validate", "flopkb.referencing", "flopkb.selection", "flopkb.staged",
                  "flopkb.report", "flopkb.extract")),
    ("verify", ("flopkb.verify",)),
    ("cli", ("flopkb.cli", "flopkb.__main__")),
    # the bundled kernels are loaded by path (flopkb.kernelpkg), never imported by flopkb
    ("kernels", ("kernels",)),
)
# Arrows allowed to point up a layer, with the reason each must stay; none is needed.
ALLOWED_UP: dict[tuple[str, str], str] = {}
# The run: what `flopkb verify` imports to run experiments, and validate never does. The hook
# modules below flopkb.verify.experiments (and flopkb.verify.errors) are imported for their
# `judge` when validate re-derives a stored verdict; they import none of these.
RUN_MODULES = ("flopkb.verify.plan", "flopkb.verify.cpu", "flopkb.verify.execute",
               "flopkb.verify.record", "flopkb.verify.session", "flopkb.verify.context",
               "flopkb.verify.timing", "flopkb.verify.machine", "flopkb.verify.plots",
               "flopkb.verify.recheck", "flopkb.verify.peers")


def _modules() -> dict[str, Path]:
    out = {}
    for package in ("flopkb", "kernels"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module `name` (a module, or a name inside one) belongs to, if it is ours."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours that `module` imports, anywhere in its source."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(_resolve(a.name, modules) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found.update(_resolve(f"{base}.{a.name}", modules) for a in node.names)
    return {m for m in found if m is not None and m != module}


def _layer(module: str) -> int:
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = prefix == "flopkb" and module == "flopkb"
            if exact or (prefix != "flopkb" and (module == prefix
                                                 or module.startswith(prefix + "."))):
                best = index
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    modules = _modules()
    g = nx.DiGraph()
    for module, path in modules.items():
        g.add_node(module)
        g.add_edges_from((module, target) for target in _imports(module, path, modules))
    return g


def test_the_import_graph_has_no_circle(graph: nx.DiGraph) -> None:
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_every_module_has_a_layer_and_no_arrow_points_up(graph: nx.DiGraph) -> None:
    up = {(a, b): f"{LAYERS[_layer(a)][0]} -> {LAYERS[_layer(b)][0]}"
          for a, b in graph.edges if _layer(b) > _layer(a)}
    assert len(ALLOWED_UP) <= 1
    assert {k: v for k, v in up.items() if k not in ALLOWED_UP} == {}


def test_the_graph_sees_the_imports_it_judges(graph: nx.DiGraph) -> None:
    # the analysis itself: a function-level import, a relative one and a `from pkg import mod`
    assert graph.has_edge("flopkb.cli.verify", "flopkb.verify.execute")
    assert graph.has_edge("flopkb.kb", "flopkb.evidence.catalogue")
    assert graph.has_edge("flopkb.evidence.rederive", "flopkb.evidence.hooks")
    assert not graph.has_edge("flopkb.evidence.hooks", "flopkb.verify.experiments.generic")


VALIDATE = """
import contextlib, io, json, runpy, sys
from flopkb.paths import bundled_root
if sys.argv[1] == "library":
    from flopkb.validate import validate
    result = validate(bundled_root())
    assert result.records > 100, result.records
else:
    sys.argv = ["flopkb", "validate", "--kb", str(bundled_root()), "--format", "json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        runpy.run_module("flopkb", run_name="__main__")
    assert json.loads(out.getvalue())["records"] > 100
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("way", ["library", "cli"])
def test_validate_imports_neither_torch_nor_the_run(way: str) -> None:
    done = subprocess.run([sys.executable, "-c", VALIDATE, way], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    loaded = set(json.loads(done.stdout))
    # it did re-derive stored verdicts with the bundled hooks' own judges
    assert {"flopkb.evidence.rederive", "flopkb.verify.experiments.ssd_vs_scan"} <= loaded
    assert not {m for m in loaded if m == "torch" or m.startswith("torch.")}
    assert not {m for m in loaded if m.startswith(RUN_MODULES)}
