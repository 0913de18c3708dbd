"""Experiment declarations: YAML files in a KB's `experiments/` -> `ExperimentInfo`, with findings.

Read like records: the safe YAML loader (sizes, depth, duplicate keys, no tags), the pydantic
model (`flopkb.model.experiment`) with every schema error located at its node (FKB12x), then the
checks a schema cannot make (FKB520-FKB526): callables and hooks resolve to a file and a name in
it, implementations are known or runnable, axes exist. Nothing here imports or runs KB code:
a callable is resolved by reading its module's source with `ast` (bounded), never by importing
it; `torch` callables are resolved when they run. One bad declaration never hides another.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from flopkb import budget
from flopkb.evidence import impls
from flopkb.evidence.impls import Side
from flopkb.findings import Finding, Severity
from flopkb.grammar.formula import FormulaError, parse_formula
from flopkb.kernelpkg import (
    MAX_KERNEL_ENTRIES,
    MAX_KERNEL_FILES,
    inside,
    kernel_entry_problem,
    kernels_dir,
    kernels_root,
    walk_sources,
)
from flopkb.load import Limits, Locator, read_document
from flopkb.load.structure import _finding
from flopkb.load.walk import display_path
from flopkb.model.experiment import GENERIC_QUANTITIES, Experiment
from flopkb.rules import finding_of

BUNDLED_HOOKS = "flopkb.verify.experiments."
# What counts as kernel source below an operator folder: Python/Triton and CUDA (a kernel built
# from a .cu at run time, e.g. reduction/cub_levels.cu, stales its evidence when it changes).
SOURCE_SUFFIXES = frozenset({".py", ".cu", ".cuh"})
EXPERIMENTS_FOLDER = "experiments"


@dataclass(frozen=True)
class ExperimentInfo:
    """What an experiment runs and measures, and how it reads a claim's magnitude."""

    name: str
    title: str
    claims: tuple[str, ...]
    kernels: tuple[str, ...]
    measures: str
    criterion: str
    sweep: str
    time_limit_s: float = 60.0
    needs: tuple[str, ...] = ()
    # the sides of the comparison and the implementations that can run each (default first);
    # an experiment with no sides runs one fixed combination
    sides: tuple[Side, ...] = ()
    # the Python module doing what the declaration cannot say; None: the declaration-only runner
    hook: str | None = None
    # the suite `verify --suite` selects it by
    suite: str = "kernels"
    # the declaration's judge_revision: evidence read under another one is stale
    judge_revision: int = 1
    # the declaration itself, the KB root it came from and its file (as reports show it)
    declaration: Experiment | None = field(default=None, compare=False, repr=False)
    origin: Path | None = field(default=None, compare=False)
    file: str = field(default="", compare=False)

    @property
    def runs_kb_code(self) -> bool:
        """Its hook is a module below the KB's kernels/ (validate never imports one)."""
        return self.hook is not None and not self.module

    @property
    def module(self) -> str:
        """The bundled hook's module name below `flopkb.verify.experiments` ('' otherwise)."""
        if self.hook and self.hook.startswith(BUNDLED_HOOKS):
            return self.hook.removeprefix(BUNDLED_HOOKS)
        return ""


# What verify and validate call on a hook module (its DEFAULTS may come from the declaration).
PROTOCOL = ("cpu_check", "measure", "judge")
MAX_DECLARATIONS = 1000
# a module read to resolve a callable: larger than this is not looked into (reported)
MAX_SOURCE_BYTES = 1 << 20
SUFFIXES = (".yaml", ".yml")


def callable_path(root: Path | None, spec: str) -> tuple[Path | None, str, str]:
    """(source file, module, function) of `module:function` below the KB's (or the bundled)
    kernels/; file None for torch callables."""
    module, _, function = spec.partition(":")
    if module == "torch" or module.startswith("torch."):
        return None, module, function
    parts = module.split(".")
    folder = kernels_dir(kernels_root(root, parts[0]))
    return folder.joinpath(*parts[:-1]) / f"{parts[-1]}.py", module, function


def _root_of(root: Path | None, module: str) -> Path | None:
    return kernels_root(root, module.split(".")[0])


def _defines(path: Path, name: str, folder: Path | None = None) -> str | None:
    """None when `path` defines `name` at top level (def, class, assignment, import); else why
    not. The source is parsed, never run."""
    try:
        if not path.is_file():
            return f"no file {path.name} there"
        # a kernels/ entry linked out of its folder is never read (nothing outside the KB is)
        if folder is not None and not path.resolve().is_relative_to(folder.resolve()):
            return f"{path.name} resolves outside the kernels/ folder it is in"
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return f"{path.name} is larger than {MAX_SOURCE_BYTES} bytes"
        tree = ast.parse(path.read_bytes(), filename=path.name)
    except (OSError, SyntaxError, ValueError) as exc:
        return f"{path.name} cannot be read as Python ({type(exc).__name__})"
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name for a in node.names):
            return None
    return f"{path.name} defines no {name!r}"


def hook_problem(root: Path | None, hook: str) -> str | None:
    """Why `hook` cannot be loaded, or None. A bundled hook is a module of
    flopkb.verify.experiments; a KB's hook is a module below its kernels/ (`op.module`, with an
    optional `:attribute`)."""
    module, _, attr = hook.partition(":")
    if module.startswith(BUNDLED_HOOKS):
        try:
            found = importlib.util.find_spec(module)
        except ImportError:
            found = None
        if found is None:
            return f"flopkb has no module {module}"
        if found.origin is None or not found.origin.endswith(".py"):
            return f"{module} is no experiment module (no source file)"
        # a helper module beside the experiments resolves too: it must have what verify calls
        for name in ([attr] if attr else list(PROTOCOL)):
            why = _defines(Path(found.origin), name)
            if why:
                return f"{module} is no experiment: {why}"
        return None
    if module.startswith("flopkb.") or module == "torch" or module.startswith("torch."):
        return f"a hook is a module of {BUNDLED_HOOKS.rstrip('.')} or below the KB's kernels/"
    path, _, _ = callable_path(root, f"{module}:{attr or 'measure'}")
    assert path is not None
    if not path.is_file():
        return f"no module {module} below kernels/ ({path.name} not found)"
    folder = kernels_dir(_root_of(root, module))
    for name in ([attr] if attr else list(PROTOCOL)):
        why = _defines(path, name, folder)
        if why:
            return why
    return None


def _semantics(root: Path | None, exp: Experiment) -> Iterable[tuple[str, tuple, str, str | None]]:
    """(rule, path in the declaration, message, hint) for what the schema cannot say."""
    sides = {s.name: s for s in exp.sides}
    axes = set(exp.axes)
    yield from _kernel_entries(root, exp.kernels)
    if exp.hook is not None:
        why = hook_problem(root, exp.hook)
        if why:
            yield ("FKB521", ("hook",), f"hook {exp.hook!r}: {why}",
                   "bundled hooks: flopkb.verify.experiments.<module>; a KB's: <op>.<module> "
                   "below its kernels/")
    for si, side in enumerate(exp.sides):
        for ii, imp in enumerate(side.implementations):
            if imp.call is None and imp.name not in impls.IMPLS:
                yield ("FKB522", ("sides", si, "implementations", ii),
                       f"side {side.name!r}: implementation {imp.name!r} has no `call` and is "
                       "not one flopkb runs", f"known: {', '.join(sorted(impls.IMPLS))}; or give "
                       "`call: module:function`")
            elif imp.call is None and exp.hook is None:
                yield ("FKB525", ("sides", si, "implementations", ii),
                       f"side {side.name!r}: implementation {imp.name!r} has no `call`, and "
                       "without a hook nothing runs it", "add `call: module:function`")
            for key in ("call", "reference"):
                spec = getattr(imp, key)
                if spec is not None:
                    yield from _callable(root, spec, ("sides", si, "implementations", ii, key))
            if exp.hook is None and imp.reference is None and side.reference is None:
                yield ("FKB525", ("sides", si, "implementations", ii),
                       f"side {side.name!r}: implementation {imp.name!r} has no correctness "
                       "reference", "a fast wrong kernel must never confirm anything: give "
                       "`reference:` on the side or the implementation")
        if side.reference is not None:
            yield from _callable(root, side.reference, ("sides", si, "reference"))
        for key in ("flops", "bytes"):
            text = getattr(side, key)
            if text is not None:
                yield from _formula(text, axes, ("sides", si, key))
    for ii, inp in enumerate(exp.inputs):
        for di, dim in enumerate(inp.shape):
            if isinstance(dim, str) and dim not in axes:
                yield ("FKB524", ("inputs", ii, "shape", di),
                       f"input {inp.name!r}: shape names {dim!r}, which is no axis",
                       f"axes: {', '.join(sorted(axes)) or 'none declared'}")
            elif isinstance(dim, int) and dim < 1:
                yield ("FKB524", ("inputs", ii, "shape", di),
                       f"input {inp.name!r}: size {dim} is not positive", None)
        if ":" in inp.maker:
            yield from _callable(root, inp.maker, ("inputs", ii, "maker"))
        elif inp.maker != "tensor":
            yield ("FKB524", ("inputs", ii, "maker"),
                   f"input {inp.name!r}: unknown maker {inp.maker!r}",
                   "the bundled maker is `tensor` (with dtype, distribution, scale, seed); a "
                   "KB's own is `module:function`")
    for key in ("point", "cpu_point"):
        for name in getattr(exp, key):
            # a hook reads its conditions itself: its point completes the hook's DEFAULTS
            if name not in axes and (exp.hook is None or exp.axes):
                yield ("FKB524", (key, name), f"{key} sets {name!r}, which is no axis",
                       f"axes: {', '.join(sorted(axes)) or 'none declared'}")
    for pi, prod in enumerate(exp.produces):
        for key in ("numerator", "denominator", "side"):
            name = getattr(prod, key)
            if name is not None and name not in sides:
                yield ("FKB526", ("produces", pi, key),
                       f"{prod.quantity}: {key} {name!r} is not a side of this experiment",
                       f"sides: {', '.join(sides) or 'none'}")
        if prod.axis is not None and prod.axis not in axes:
            yield ("FKB524", ("produces", pi, "axis"),
                   f"{prod.quantity}: axis {prod.axis!r} is not declared", None)
        if prod.work is not None:
            yield from _formula(prod.work, axes, ("produces", pi, "work"))
    if exp.hook is None:
        yield from _hookless(exp)


def _kernel_entries(root: Path | None, entries: list[str]) -> Iterable[tuple]:
    """FKB530 for `kernels:` entries that are no plain path below kernels/, that a link leads
    out of it, or that name more files than a walk reads. Nothing outside is looked at."""
    if len(entries) > MAX_KERNEL_ENTRIES:
        yield ("FKB530", ("kernels",), f"{len(entries)} kernels entries; at most "
               f"{MAX_KERNEL_ENTRIES}", "list operator folders (`op/`) rather than files")
    for i, entry in enumerate(entries[:MAX_KERNEL_ENTRIES]):
        why = kernel_entry_problem(entry)
        shown = entry if len(entry) <= 60 else f"{entry[:60]}... ({len(entry)} characters)"
        if why:
            yield ("FKB530", ("kernels", i), f"kernels entry {shown!r}: {why}",
                   "an entry is a path below the KB's kernels/ (or the bundled one), e.g. "
                   "`rmsnorm/` or `rmsnorm/fused.py`")
            continue
        folder = kernels_dir(kernels_root(root, entry))
        base = folder / entry
        if not base.exists():
            continue
        if not inside(folder, base):
            yield ("FKB530", ("kernels", i), f"kernels entry {shown!r} is a link leading out "
                   "of the kernels/ folder; it is never read", "keep kernel sources inside "
                   "kernels/ (copy them in rather than linking)")
            continue
        if entry.endswith("/") and base.is_dir():
            found = list(walk_sources(base, SOURCE_SUFFIXES))
            if len(found) > MAX_KERNEL_FILES:
                yield ("FKB530", ("kernels", i), f"kernels entry {shown!r} holds more than "
                       f"{MAX_KERNEL_FILES} kernel sources; only the first are hashed",
                       "list the operator's own folder, not one above it")
            out = [p for p in found if not inside(folder, p)]
            if out:
                yield ("FKB530", ("kernels", i), f"kernels entry {shown!r}: {len(out)} "
                       f"file(s) are links leading out of kernels/ (first: "
                       f"{out[0].relative_to(folder).as_posix()!r}); they are never read",
                       "keep kernel sources inside kernels/ (copy them in rather than "
                       "linking)")


def _hookless(exp: Experiment) -> Iterable[tuple[str, tuple, str, str | None]]:
    """What the declaration-only runner needs beyond the schema."""
    if not exp.sides:
        yield ("FKB525", ("sides",), "no sides: the declaration-only runner has nothing to run",
               "declare sides with implementations, or name a hook")
    if not exp.produces:
        yield ("FKB525", ("produces",), "no produced quantity", "e.g. produces: "
               "[{quantity: time_ratio, numerator: unfused, denominator: fused}]")
    for pi, prod in enumerate(exp.produces):
        if prod.quantity not in GENERIC_QUANTITIES:
            yield ("FKB525", ("produces", pi, "quantity"),
                   f"{prod.quantity} needs a hook: the declaration-only runner produces "
                   f"{', '.join(sorted(GENERIC_QUANTITIES))}", "name a hook module")
        elif prod.quantity in {"time_ratio", "crossover"} and (
                prod.numerator is None or prod.denominator is None):
            yield ("FKB525", ("produces", pi), f"{prod.quantity} needs numerator and denominator "
                   "sides", None)
        elif prod.quantity == "crossover" and prod.axis is None:
            yield ("FKB525", ("produces", pi), "crossover needs the swept `axis`", None)
        elif prod.quantity in {"throughput", "time", "roofline_fraction", "equivalence"} and (
                prod.side is None):
            yield ("FKB525", ("produces", pi), f"{prod.quantity} needs the `side` it times", None)
        if prod.quantity == "throughput" and (prod.work is None or prod.unit is None):
            yield ("FKB525", ("produces", pi), "throughput needs `work` (per call, over the "
                   "axes) and its `unit` (e.g. TFLOP/s)", None)
    if not exp.inputs:
        yield ("FKB525", ("inputs",), "no inputs", "declare the inputs every implementation "
               "takes, in order")


def _callable(root: Path | None, spec: str, where: tuple) -> Iterable[tuple]:
    path, module, function = callable_path(root, spec)
    if path is None:
        return
    why = _defines(path, function, kernels_dir(_root_of(root, module)))
    if why:
        yield ("FKB523", where, f"{spec!r}: {why}",
               f"{module} is kernels/{module.replace('.', '/')}.py of the KB (or the bundled "
               "kernels when the KB has no such operator folder)")


def _formula(text: str, axes: set[str], where: tuple) -> Iterable[tuple]:
    try:
        names = parse_formula(text).names
    except FormulaError as exc:
        yield ("FKB524", where, f"formula {text!r}: {exc}", None)
        return
    unknown = sorted(names - axes)
    if unknown:
        yield ("FKB524", where, f"formula {text!r} names {', '.join(unknown)}, which is no axis",
               f"axes: {', '.join(sorted(axes)) or 'none declared'}")


def _callable_folders(exp: Experiment) -> tuple[str, ...]:
    """The operator folders of a declaration's callables (torch's excepted): what its evidence
    hashes when it lists no `kernels` itself, so that editing the kernel stales the evidence."""
    specs = [exp.hook or ""] + [inp.maker for inp in exp.inputs]
    for side in exp.sides:
        specs += [side.reference or ""] + [i.call or "" for i in side.implementations]
        specs += [i.reference or "" for i in side.implementations]
    folders = set()
    for spec in specs:
        module = spec.partition(":")[0]
        if ":" not in spec and spec != exp.hook:
            continue
        if not module or module == "torch" or module.startswith(("torch.", "flopkb.")):
            continue
        parts = module.split(".")
        folders.add(f"{parts[0]}/" if len(parts) > 1 else f"{parts[0]}.py")
    return tuple(sorted(folders))


def _files(folder: Path) -> tuple[list[Path], list[Finding]]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return [], []
    names = [n for n in names if n.endswith(SUFFIXES) and not n.startswith(".")]
    findings = []
    if len(names) > MAX_DECLARATIONS:
        findings.append(finding_of("FKB133", str(folder), 0, 0, None,
                                   f"{len(names)} experiment declarations; at most "
                                   f"{MAX_DECLARATIONS} are read", None))
    return [folder / n for n in names[:MAX_DECLARATIONS]], findings


def load_folder(root: Path, *, bundled: bool) -> tuple[dict, list[Finding], dict[str, Path]]:
    """(name -> ExperimentInfo, findings, name -> file) of the declarations in root/experiments/.
    A declaration with an error finding is left out (a link to it then says so: FKB507)."""
    paths, findings = _files(root / EXPERIMENTS_FOLDER)
    infos: dict = {}
    files: dict[str, Path] = {}
    for path in paths:
        display = display_path(path)
        try:
            found, info = _one(root, path, display, bundled)
        except Exception as exc:
            # a bug some declaration trips is that declaration's finding, never the run's
            found, info = [finding_of("FKB199", display, 0, 0, path.stem,
                                      f"internal error reading this experiment: "
                                      f"{type(exc).__name__}: {str(exc)[:200]}",
                                      "this is a bug in flopkb; please report it")], None
        findings += found
        if info is None:
            continue
        if info.name in infos:
            findings.append(finding_of("FKB520", display, 1, 1, info.name,
                                       f"experiment {info.name!r} is declared twice (also in "
                                       f"{infos[info.name].file})", None))
            continue
        infos[info.name] = info
        files[info.name] = path
    return infos, findings, files


def _one(root: Path, path: Path, display: str, bundled: bool):
    doc = read_document(path, display, Limits())
    if doc.data is None:
        return doc.findings, None
    findings = list(doc.findings)
    locator = Locator(doc.node)
    stem = path.stem
    try:
        exp = Experiment.model_validate(doc.data)
    except ValidationError as exc:
        for err in exc.errors(include_url=False)[: budget.MAX_FINDINGS_PER_FILE]:
            findings.append(_finding(doc, locator, stem, Experiment, err))
        return findings, None

    def add(code: str, where: tuple, message: str, hint: str | None) -> None:
        line, column = locator.locate(where)
        findings.append(finding_of(code, display, line, column, exp.id, message, hint))

    if exp.id != stem:
        add("FKB520", ("id",), f"id {exp.id!r} differs from the file stem {stem!r}",
            f"rename the file to {exp.id}{path.suffix}")
    for code, where, message, hint in _semantics(root, exp):
        add(code, where, message, hint)
    if any(f.severity is Severity.error for f in findings):
        return findings, None
    sides = tuple(Side(s.name, tuple(i.name for i in s.implementations))
                  for s in exp.sides)
    info = ExperimentInfo(
        name=exp.id, title=exp.title, claims=tuple(exp.claims),
        kernels=tuple(exp.kernels) or _callable_folders(exp),
        measures=exp.measures, criterion=exp.criterion, sweep=exp.sweep,
        time_limit_s=exp.time_limit_s, needs=tuple(exp.needs), sides=sides, hook=exp.hook,
        suite=exp.suite, judge_revision=exp.judge_revision, declaration=exp, origin=root,
        file=display)
    return findings, info
