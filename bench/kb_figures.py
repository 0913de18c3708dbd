"""Figures blocks about the bundled KB itself (counts, dates, status), for bench/docs_figures.py.

Every count README and docs give of the bundled records comes from here, read from `records/`,
so that adding a record cannot leave a stale count behind: `tests/unit/test_readme.py` fails until
`python bench/docs_figures.py` has rewritten the blocks. Figures quoted inside a sentence
(`dated_records`, `accepted_versions`) are checked by `tests/unit/test_docs_counts.py` instead.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flopkb.graph import KBGraph, status
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import ACCEPTED_SCHEMA_VERSIONS
from flopkb.plural import count

ROOT = Path(__file__).resolve().parents[1]
# the classes DESIGN's vocabulary requires (README says "the N required classes plus ...")
REQUIRED_CLASSES = (
    "selective-ssm-scan", "mamba2-ssd", "flash-attention-2", "dense-gemm", "low-rank-gemm",
    "int8-gemm", "gpu-reduction", "nemotron-h", "samba", "jamba", "kimi-linear",
)  # fmt: skip


def kb_of(root: Path = ROOT) -> KnowledgeBase:
    """The bundled KB (or the one at `root`); loading errors stop the generator, naming them."""
    kb, findings = load_kb(root)
    errors = [f for f in findings if f.severity.value == "error"]
    if errors:
        raise SystemExit("\n".join(f"{f.file}: {f.rule} {f.message}" for f in errors))
    return kb


def _ids(ids: list[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)



def _rows(kb: KnowledgeBase) -> list[Any]:
    return [row for c in kb.classes.values() for row in c.flop.hardware_parameters]


def _basis(kb: KnowledgeBase) -> str:
    by = Counter(row.basis.value for row in _rows(kb))
    order = ("cited", "derived", "unverified", "measured")
    return ", ".join(f"{by[b]} {b}" for b in order if by[b])


def block_kb_summary(_: Any = None, root: Path = ROOT) -> str:
    """README's paragraph on what `records/` holds."""
    kb = kb_of(root)
    extra = sorted(set(kb.classes) - set(REQUIRED_CLASSES))
    required = len(set(REQUIRED_CLASSES) & set(kb.classes))
    computed = sorted(q for q, rec in kb.quantities.items() if rec.formula)
    text = (
        "`records/` holds one YAML record per file, file stem == id, in a folder per kind: "
        f"`classes/` ({len(kb.classes)}: the {required} required classes plus {_ids(extra)}), "
        f"`accelerators/` ({len(kb.accelerators)}: {_ids(sorted(kb.accelerators))}, every spec "
        "with value, unit and source, dense rates, Hopper's INT4 an explicit null), "
        f"`quantities/` ({len(kb.quantities)}, {len(computed)} computed: {_ids(computed)}), "
        f"`sources/` ({len(kb.sources)}), `architectures/` ({len(kb.architectures)}: model "
        "configurations, every value with its source) and "
        f"`evidence/` ({len(kb.evidence)}, written by verify): "
        f"{len(kb.records)} records. {len(_rows(kb))} claims cover every claim of the starting "
        f"material (A1-D4, as the verdict table labels them); by basis: {_basis(kb)}."
    )
    return _wrapped(text)


def block_kb_counts(_: Any = None, root: Path = ROOT) -> str:
    """docs/kb.md's counts: records by kind, claims by basis, rows linking an experiment."""
    kb = kb_of(root)
    rows = _rows(kb)
    linked = sum(1 for row in rows if row.verify is not None and row.verify.runs)
    excused = sum(1 for row in rows if row.verify is not None and not row.verify.runs)
    text = (
        f"`records/` holds {len(kb.records)} records: {len(kb.classes)} classes, "
        f"{len(kb.accelerators)} accelerators, {len(kb.quantities)} quantities, "
        f"{len(kb.sources)} sources, {len(kb.architectures)} architectures and "
        f"{len(kb.evidence)} evidence records written by "
        f"`flopkb verify`. {len(rows)} claim rows; by basis: {_basis(kb)}; "
        f"{count(linked, 'row links', 'rows link')} a `verify.experiment`, "
        f"{count(excused, 'row says', 'rows say')} `verify.not_applicable` (no single GPU "
        "judges it by design)."
    )
    return _wrapped(text)


def _has_date(value: Any) -> bool:
    if isinstance(value, dt.date):
        return True
    if isinstance(value, dict):
        return any(_has_date(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_date(v) for v in value)
    return False


def dated_records(root: Path = ROOT) -> str:
    """"N of the M bundled records": those a YAML 1.1 loader turns a date of into a
    `datetime.date` (README and docs/validate.md quote it inline; a test checks the figure)."""
    paths = sorted((root / "records").rglob("*.yaml"))
    dated = sum(
        1 for p in paths if _has_date(yaml.load(p.read_text(encoding="utf-8"), yaml.SafeLoader))
    )
    return f"{dated} of the {len(paths)} bundled records"


def accepted_versions() -> str:
    """The accepted schema versions as docs list them inline: "1, 2 and 3" (a test checks)."""
    versions = [str(v) for v in sorted(ACCEPTED_SCHEMA_VERSIONS)]
    if len(versions) == 1:
        return versions[0]
    return ", ".join(versions[:-1]) + f" and {versions[-1]}"


def block_graph_status(_: Any = None, root: Path = ROOT) -> str:
    """docs/graph.md's `status` example, summarised from the library's answer on the bundled KB
    (the text output draws the same sections as tables)."""
    result = status(KBGraph.from_kb(kb_of(root)))
    lines = ["    $ flopkb graph status            # each section is a table; here its rows' ids"]
    sections = (
        ("unverified", "unverified", None),
        ("stale", "stale", None),
        ("contradicted", "contradicted", "accelerators"),
        ("disagreeing runs", "disagreeing", "accelerators"),
        ("implementation-sensitive", "implementation_sensitive", "accelerators"),
        ("not applicable", "not_applicable", "accelerators"),
        ("not verified by design", "not_verifiable", None),
    )
    for title, key, where in sections:
        rows = result[key]
        if not rows:
            lines.append(f"    {title}: none")
            continue
        lines.append(f"    {title}: {len(rows)}")
        for row in rows:
            on = f" (on {', '.join(row[where])})" if where else ""
            lines.append(f"      {row['claim']}{on}")
    return "\n".join(lines) + "\n"


def _wrapped(text: str, width: int = 100) -> str:
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return "\n".join(out) + "\n"


BLOCKS = {
    "kb-summary": block_kb_summary,
    "kb-counts": block_kb_counts,
    "graph-status": block_graph_status,
}
