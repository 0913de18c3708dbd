"""The resolved knowledge base: validated records by id, with the file each came from.

`load_kb(root)` reads every record file under `root/records` (or `root` itself when it has no
`records/`; the walk's rules are in `flopkb.load.walk`), one broken file never hiding the others,
and returns the KB together with the findings of walking, loading and structure. Cross-record checks
run on the result (`flopkb.check`).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from yaml.nodes import Node

from flopkb.evidence import catalogue as experiment_catalogue
from flopkb.evidence.catalogue import Catalogue
from flopkb.evidence.plausibility import implausible_evidence
from flopkb.evidence.rederive import Problem, untrusted
from flopkb.findings import Finding
from flopkb.load import (
    Document,
    Limits,
    Locator,
    compose_node,
    read_document,
    to_record,
)
from flopkb.load.walk import display_path, walk_records
from flopkb.model import (
    AcceleratorRecord,
    ArchitectureRecord,
    ClassRecord,
    EvidenceRecord,
    HardwareParameter,
    QuantityRecord,
    Record,
    SourceRecord,
)
from flopkb.rules import finding_of

T = TypeVar("T")
R = TypeVar("R", bound=Record)


class _RecordsOf(Generic[R]):
    """A read-only attribute of the KB: its records of one type, by id (`kb.classes`, ...)."""

    def __init__(self, cls: type[R]) -> None:
        self.cls = cls

    @overload
    def __get__(self, kb: None, owner: type | None = None) -> _RecordsOf[R]: ...

    @overload
    def __get__(self, kb: KnowledgeBase, owner: type | None = None) -> dict[str, R]: ...

    def __get__(self, kb: KnowledgeBase | None, owner: type | None = None) -> Any:
        # read on the class (help(), inspect, docs tools), the attribute is this descriptor
        return self if kb is None else kb.records_of(self.cls)

    def __set__(self, kb: KnowledgeBase, value: object) -> None:
        raise AttributeError("the KB's records by type are computed from `records`")


@dataclass
class KnowledgeBase:
    """Records by id. Only records that passed the schema are here; findings say what did not.

    `unloaded` maps the id (and file stem) of every file that failed to load or validate to that
    file, so that references to it are not reported a second time as unresolved.
    `duplicates` lists `(id, file kept, other file)` for ids defined twice.
    """

    root: Path | None
    records: dict[str, Record] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    displays: dict[str, str] = field(default_factory=dict)
    unloaded: dict[str, str] = field(default_factory=dict)
    # records checked from the parts that parsed (load.salvage): id -> file; they have findings
    partial: dict[str, str] = field(default_factory=dict)
    duplicates: list[tuple[str, str, str]] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    _nodes: dict[str, Locator] = field(default_factory=dict, repr=False)
    # name -> ((id, len) of `records`, value): see `per_state`
    _per_state: dict[str, tuple[tuple[int, int], Any]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _catalogue: Catalogue | None = field(default=None, repr=False, compare=False)

    def per_state(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()`, computed once per state of `records` (the same dict, as many records) and
        kept under `name`: checks, queries and pooling ask for these values many times over."""
        key = (id(self.records), len(self.records))
        held = self._per_state.get(name)
        if held is None or held[0] != key:
            held = (key, compute())
            self._per_state[name] = held
        return held[1]

    def _by_type(self) -> dict[type, dict[str, Any]]:
        by_type: dict[type, dict[str, Any]] = {}
        for rid, record in self.records.items():
            by_type.setdefault(type(record), {})[rid] = record
        return by_type

    def records_of(self, cls: type[R]) -> dict[str, R]:
        """The KB's records of type `cls`, by id."""
        # Checks ask for `kb.classes` etc. many times: index by type once per state of `records`.
        return self.per_state("by_type", self._by_type).get(cls, {})

    classes = _RecordsOf(ClassRecord)
    accelerators = _RecordsOf(AcceleratorRecord)
    quantities = _RecordsOf(QuantityRecord)
    sources = _RecordsOf(SourceRecord)
    evidence = _RecordsOf(EvidenceRecord)
    architectures = _RecordsOf(ArchitectureRecord)

    def implausible_evidence(self) -> dict[str, tuple[str, str]]:
        """evidence id -> (kind, why) for evidence whose timestamp cannot be true (in the future,
        or before its accelerator existed): it never gives a claim's latest verdict
        (`flopkb.evidence.plausibility`). Computed once per state of `records`."""
        return self.per_state("implausible", lambda: implausible_evidence(self))

    def catalogue(self) -> Catalogue:
        """The experiments this KB sees (`flopkb.evidence.catalogue.for_kb`), read once per KB
        and handed to what asks (re-derivation, staleness, pooling and the run ask per evidence
        record or job; each `for_kb` call re-stats the declaration and kernel files)."""
        if self._catalogue is None:
            self._catalogue = experiment_catalogue.for_kb(self.root)
        return self._catalogue

    def untrusted_evidence(self) -> dict[str, list[Problem]]:
        """evidence id -> the `flopkb.evidence.rederive.Problem`s of evidence whose verdict does not
        re-derive from its stored numbers: it never gives or backs a verdict. Computed once per
        state of `records`."""
        return self.per_state("untrusted", lambda: untrusted(self))

    def claims(self) -> Iterator[tuple[str, ClassRecord, HardwareParameter]]:
        """Every claim as (global id `<record>/<row>`, its class record, its row)."""
        for rid, record in sorted(self.classes.items()):
            for row in record.flop.hardware_parameters:
                yield f"{rid}/{row.id}", record, row

    def claim(self, claim_id: str) -> tuple[ClassRecord, HardwareParameter] | None:
        record_id, _, row_id = claim_id.partition("/")
        record = self.classes.get(record_id)
        if record is None:
            return None
        return next(((record, r) for r in record.flop.hardware_parameters if r.id == row_id), None)

    def file_of(self, record_id: str) -> str:
        """The file of a record as reports show it (relative to the working directory if inside)."""
        if record_id in self.displays:
            return self.displays[record_id]
        path = self.files.get(record_id)
        return display_path(path) if path is not None else ""

    def where(self, record_id: str, *path: str | int) -> tuple[str, int, int]:
        """File, 1-based line and column of the node at `path` in a record (or its nearest parent).

        Node trees are not kept for every record (memory at 10^4 records); the file is composed
        again the first time a check asks for a location in it.
        """
        file = self.file_of(record_id)
        if record_id not in self._nodes:
            source = self.files.get(record_id)
            node: Node | None = compose_node(source, self.limits) if source is not None else None
            self._nodes[record_id] = Locator(node)
        line, column = self._nodes[record_id].locate(path)
        return file, line, column


def record_files(root: Path) -> list[Path]:
    """Every `*.yaml` / `*.yml` file under the KB's `records/` (or `root` itself), sorted.

    The files a bounded, symlink-safe walk found (`flopkb.load.walk`); the walk's own findings (a
    FIFO, a link out of the KB, an unreadable folder) come with `walk_records` and `load_kb`.
    """
    return walk_records(root).files


# Below this many files a process pool costs more than it saves.
PARALLEL_MIN_FILES = 1500


def workers_for(n_items: int) -> int:
    """Processes to use: FLOPKB_WORKERS if set, else the CPUs this process may use (at most 4).

    1 (serial) for small jobs, where `fork` is unavailable, and in a process running other
    threads: workers inherit the loaded modules (and, for checks, the loaded KB) by forking,
    which is what makes them cheap.
    """
    # read at call time, so that tests (and embedders) can lower the threshold
    if n_items < PARALLEL_MIN_FILES or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    # forking a process that runs other threads can deadlock (and warns on Python >= 3.12)
    if threading.active_count() > 1:
        return 1
    env = os.environ.get("FLOPKB_WORKERS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _read_chunk(
    paths: list[Path], limits: Limits
) -> list[tuple[dict[str, Any] | None, list[Finding]]]:
    """Worker: files -> (value or None, findings); node trees stay behind (where() recomposes)."""
    out = []
    cwd = os.getcwd()
    for path in paths:
        doc = _read_one(path, limits, cwd)
        out.append((doc.data, doc.findings))
    return out


def _internal_error(display: str, record: str | None, stage: str, exc: BaseException) -> Finding:
    return finding_of(
        "FKB199", display, 0, 0, record,
        f"internal error while {stage} this file: {type(exc).__name__}: {str(exc)[:200]}",
        "this is a bug in flopkb, not in the records; please report it",
    )  # fmt: skip


def _read_one(path: Path, limits: Limits, cwd: str | None = None) -> Document:
    """read_document, where an exception (a bug) is a finding of this file, never of the run."""
    display = display_path(path, cwd)
    try:
        return read_document(path, display, limits)
    except Exception as exc:
        doc = Document(path=path, display=display)
        doc.findings.append(_internal_error(display, None, "reading", exc))
        return doc


def _documents(paths: list[Path], limits: Limits) -> Iterator[Document]:
    workers = workers_for(len(paths))
    cwd = os.getcwd()
    if workers == 1:
        for path in paths:
            yield _read_one(path, limits, cwd)
        return
    size = -(-len(paths) // (workers * 4))
    chunks = [paths[i : i + size] for i in range(0, len(paths), size)]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for chunk, results in zip(
            chunks, pool.map(_read_chunk, chunks, [limits] * len(chunks)), strict=True
        ):
            for path, (data, findings) in zip(chunk, results, strict=True):
                display = display_path(path, cwd)
                yield Document(path=path, display=display, data=data, findings=findings)


def load_files(
    paths: Iterable[Path], root: Path | None = None, limits: Limits | None = None
) -> tuple[KnowledgeBase, list[Finding]]:
    """Load `paths` into one KB: findings of reading and structure, never an exception per file.

    Large KBs are read by a pool of forked workers (YAML parsing is the bulk of the time); the
    cyclic garbage collector is paused meanwhile, as the many long-lived objects built here would
    otherwise make each of its passes longer.
    """
    kb = KnowledgeBase(root=root, limits=limits or Limits())
    findings: list[Finding] = []
    with gc_paused():
        for doc in _documents(list(paths), kb.limits):
            _add(kb, doc, findings)
    return kb, findings


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while many long-lived objects are built (loading, graph building):
    they hold no reference cycles, and each collection pass would rescan them all."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _add(kb: KnowledgeBase, doc: Document, findings: list[Finding]) -> None:
    findings.extend(doc.findings)
    path, display = doc.path, doc.display
    if doc.data is None:
        kb.unloaded.setdefault(path.stem, display)
        return
    try:
        record, problems = to_record(doc, path.stem, kb.limits)
    except Exception as exc:
        record, problems = None, [_internal_error(display, path.stem, "validating", exc)]
    findings.extend(problems)
    if record is None:
        kb.unloaded.setdefault(path.stem, display)
        if isinstance(doc.data.get("id"), str):
            kb.unloaded.setdefault(doc.data["id"], display)
        return
    if problems:
        kb.partial[record.id] = display
    if problems and isinstance(record, ClassRecord):
        # claim rows dropped by salvage: evidence naming them is not reported again
        kept = {row.id for row in record.flop.hardware_parameters}
        flop = doc.data.get("flop")
        rows = flop.get("hardware_parameters") if isinstance(flop, dict) else None
        for row in rows if isinstance(rows, list) else []:
            row_id = row.get("id") if isinstance(row, dict) else None
            if isinstance(row_id, str) and row_id not in kept:
                kb.unloaded.setdefault(f"{record.id}/{row_id}", display)
    if record.id in kb.records:
        kb.duplicates.append((record.id, kb.displays[record.id], display))
        return
    kb.records[record.id] = record  # type: ignore[assignment]
    kb.files[record.id] = path
    kb.displays[record.id] = display


def load_kb(
    root: Path | str, limits: Limits | None = None
) -> tuple[KnowledgeBase, list[Finding]]:
    """Load the KB at `root` (a folder holding `records/`, or a records folder itself; a path or
    a str such as `"."`).

    The walk's findings (files refused or not reached) come first among the findings.
    """
    root = Path(root)
    walk = walk_records(root)
    kb, findings = load_files(walk.files, root=root, limits=limits)
    return kb, [*walk.findings, *findings]
