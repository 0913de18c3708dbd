"""The code that measures and judges an experiment, resolved by name from its declaration.

A declaration's `hook` is a module name: a bundled one (`flopkb.verify.experiments.<module>`) is
imported by that name, a KB's own (`<op>.<module>`, below its kernels/) is loaded from the KB's
kernels/ folder; a declaration without a hook runs on the declaration-only runner
(`DECLARATION_RUNNER`, also imported by name). Nothing here imports the run or torch: a hook
module imports neither at module level, so `flopkb validate` resolves a bundled hook to re-derive
a stored verdict with the experiment's own `judge` (`flopkb.evidence.rederive`) and never loads
the KB's own code (`kb_code=False`).

`experiment_module` is the one seam both `verify` and validate go through (tests replace it).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from pathlib import Path
from typing import Any

from flopkb.evidence.declared import BUNDLED_HOOKS, ExperimentInfo
from flopkb.kernelpkg import kernels_root, load_module

# The module whose DeclaredExperiment runs a hook-less declaration (the module protocol below).
DECLARATION_RUNNER = f"{BUNDLED_HOOKS}generic"


class KBCodeRefused(LookupError):
    """The experiment's hook is the KB's own code, which this caller never runs."""


def experiment_module(info: ExperimentInfo, kb_root: Path | None, *, kb_code: bool = True
                      ) -> Any:
    """What runs experiment `info`: an object with the module protocol (DEFAULTS, PASSES,
    cpu_check, measure, judge). Its hook module (bundled, or with `kb_code` one below the KB's
    kernels/), or the declaration-only runner for a hook-less declaration. Raises KBCodeRefused
    for a KB's hook without `kb_code`."""
    if info.hook is None:
        assert info.declaration is not None
        runner = importlib.import_module(DECLARATION_RUNNER)
        return runner.DeclaredExperiment(info.declaration, kb_root)
    module, _, attr = info.hook.partition(":")
    if module.startswith(BUNDLED_HOOKS):
        loaded = importlib.import_module(module)
    elif not kb_code:
        raise KBCodeRefused(f"{info.name}'s hook {info.hook!r} is the KB's own code")
    else:
        loaded = load_module(module, kernels_root(kb_root, module.split(".")[0]))
    hook = getattr(loaded, attr) if attr else loaded
    point = dict(info.declaration.point) if info.declaration is not None else {}
    if info.declaration is not None and info.declaration.floor_fraction is not None:
        # a judging rule's threshold, read by `judge` from the conditions it is given
        point["floor_fraction"] = info.declaration.floor_fraction
    if point or (info.declaration is not None and _wants_declaration(hook)):
        return WithPoint(hook, point, info.declaration)
    return hook


def _wants_declaration(hook: Any, name: str = "judge") -> bool:
    """Whether the hook's `name` (judge, measure) reads its declaration (a keyword
    `declaration`): what it judges by is then data the declaration states (an equivalence's
    atol / rtol), never the record's."""
    fn = getattr(hook, name, None)
    try:
        return fn is not None and "declaration" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def kb_code_in(info: ExperimentInfo, kb_root: Path | None) -> str | None:
    """Why running experiment `info` on the KB at `kb_root` runs the KB's own code (its hook, or
    a kernel, callable or input maker below the KB's kernels/, which stands in for the bundled
    operator of that name), or None when it runs only flopkb's. On the bundled KB itself every
    kernel is the KB's. Read from the declaration: nothing is imported."""
    if info.runs_kb_code:
        return f"its hook {info.hook!r} is the KB's code"
    if kb_root is None:
        return None
    names = list(info.kernels)
    decl = info.declaration
    if decl is not None:
        specs = [inp.maker for inp in decl.inputs]
        for side in decl.sides:
            specs += [side.reference or ""] + [i.call or "" for i in side.implementations]
            specs += [i.reference or "" for i in side.implementations]
        names += [s.partition(":")[0].split(".")[0] for s in specs
                  if ":" in s and not s.startswith("torch")]
    own = sorted({n for n in names if kernels_root(kb_root, n) is not None})
    if own:
        return f"it runs the KB's kernels/ ({', '.join(own[:4])}{', ...' if len(own) > 4 else ''})"
    return None


class WithPoint:
    """A hook whose DEFAULTS the declaration's `point` completes: the claim's conditions are data
    in the declaration, and several declarations share one hook's code. A hook whose `judge`
    takes `declaration` is handed its own."""

    def __init__(self, hook: Any, point: dict[str, Any], declaration: Any = None) -> None:
        self._hook = hook
        self.DEFAULTS = {**getattr(hook, "DEFAULTS", {}), **point}
        for name in ("judge", "measure"):
            if declaration is not None and _wants_declaration(hook, name):
                setattr(self, name, functools.partial(getattr(hook, name),
                                                      declaration=declaration))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._hook, name)
