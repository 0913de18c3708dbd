"""The experiments `flopkb verify` knows: declarations read from YAML, never a list in code.

Importing this module never imports torch. The bundled experiments are the declarations in the
bundled KB's `experiments/` folder; a KB adds its own (or replaces a bundled one of the same id)
with declarations in its own `experiments/`, written the same way (`flopkb.model.experiment`).
`for_kb(root)` is the catalogue a run on that KB sees; `EXPERIMENTS` / `get` are the bundled ones.

`flopkb validate` uses the catalogue to check that an evidence record or a claim row's
`verify.experiment` names an experiment that exists, and `hashing` uses `kernels` to hash the
kernel sources an experiment runs. An experiment's code is its `hook` module (the bundled hooks
are `flopkb/verify/experiments/<module>.py`), or the declaration-only runner
(`flopkb.verify.experiments.generic`) when it names none; either is imported only when it runs
or is judged again (`flopkb.evidence.hooks`).

Built once per KB (`KnowledgeBase.catalogue()`) and handed to whatever asks about experiments:
`for_kb` re-stats the declaration and kernel files to validate its cache, so nothing calls it
per evidence record or per job.

`kernels` entries are paths relative to the KB's `kernels/` folder; an entry ending in "/" stands
for every kernel source below that folder (`*.py`, `*.cu`, `*.cuh`), so a kernel module added or
renamed inside an operator's folder still counts towards the hash.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from flopkb.evidence.declared import EXPERIMENTS_FOLDER, ExperimentInfo, load_folder
from flopkb.findings import Finding
from flopkb.paths import bundled_root


@dataclass
class Catalogue:
    """The experiments one KB sees (bundled, then its own), and the findings of declaring them."""

    experiments: dict[str, ExperimentInfo] = field(default_factory=dict)
    # the findings of the KB's own declarations (the bundled KB's own when it is the KB)
    findings: list[Finding] = field(default_factory=list)
    # locations of every declaration's YAML nodes, for findings about a link to it
    files: dict[str, Path] = field(default_factory=dict)

    def exists(self, name: str) -> bool:
        return name in self.experiments

    def get(self, name: str) -> ExperimentInfo:
        """The experiment called `name`; KeyError names the known ones."""
        try:
            return self.experiments[name]
        except KeyError:
            raise KeyError(f"no experiment {name!r}; known: {', '.join(sorted(self.experiments))}"
                           ) from None

    def own(self, root: Path | None) -> list[str]:
        """The experiments declared by the KB at `root` itself."""
        if root is None:
            return []
        here = Path(os.path.abspath(root))
        return [n for n, i in self.experiments.items()
                if i.origin is not None and Path(os.path.abspath(i.origin)) == here]


def _ordered(found: dict[str, ExperimentInfo]) -> dict[str, ExperimentInfo]:
    # calibration first (every GPU run starts with it), then by the claim label each was written
    # for (A1, A2, ...), then by id: a stable order for plans and shards
    def key(item: tuple[str, ExperimentInfo]) -> tuple[int, str, str]:
        name, info = item
        return (name != "calibration", info.claims[0] if info.claims else "~", name)

    return dict(sorted(found.items(), key=key))


_CACHE: dict[tuple[str, tuple[tuple[str, int, int], ...]], Catalogue] = {}


def _stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What a cached catalogue of `root` depends on: the names, sizes and times of its
    declaration files and of the Python files below its kernels/ (callables and hooks resolve
    there), bounded."""
    out: list[tuple[str, int, int]] = []
    for folder, pattern in ((root / EXPERIMENTS_FOLDER, "*"), (root / "kernels", "**/*.py")):
        try:
            paths = sorted(folder.glob(pattern))[:4096]
        except OSError:
            continue
        for path in paths:
            try:
                st = path.lstat()
            except OSError:
                continue
            out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _declared(root: Path, bundled: bool) -> Catalogue:
    key = (str(Path(os.path.abspath(root))), _stamp(root))
    if key not in _CACHE:
        infos, findings, files = load_folder(root, bundled=bundled)
        _CACHE[key] = Catalogue(_ordered(infos), findings, files)
    return _CACHE[key]


def bundled() -> Catalogue:
    """The bundled KB's experiments."""
    return _declared(bundled_root(), bundled=True)


def for_kb(root: Path | None) -> Catalogue:
    """The experiments a run on the KB at `root` sees: the bundled ones, with the KB's own
    declarations added (one with a bundled id replaces it). Findings: the KB's own."""
    base = bundled()
    if root is None:
        return Catalogue(dict(base.experiments), [], dict(base.files))
    if Path(os.path.abspath(root)) == Path(os.path.abspath(bundled_root())):
        return base
    own = _declared(root, bundled=False)
    merged = {**base.experiments, **own.experiments}
    return Catalogue(_ordered(merged), list(own.findings), {**base.files, **own.files})


def __getattr__(name: str) -> dict[str, ExperimentInfo]:
    # `EXPERIMENTS`: the bundled experiments by name, read on first use (importing the registry
    # reads no file); it is the catalogue's own dict, so a test patching one entry patches what
    # `get` and `for_kb` see
    if name == "EXPERIMENTS":
        return bundled().experiments
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def experiment_exists(name: str) -> bool:
    """Whether a bundled experiment is called `name`."""
    return bundled().exists(name)


def get(name: str) -> ExperimentInfo:
    """The bundled experiment called `name`; KeyError names the known ones."""
    return bundled().get(name)
