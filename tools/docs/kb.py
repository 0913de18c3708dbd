"""Figures about the bundled KB itself (docs/kb.md's counts, docs/graph.md's `status` example),
read from `records/`, so that adding a record cannot leave a stale count behind; the figures
docs/validate.md quotes inside its sentences (`block_dated_records`, `block_schema_versions`) are
inline blocks of the same kind."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from flopkb.graph import KBGraph, status
from flopkb.kb import KnowledgeBase
from flopkb.model import ACCEPTED_SCHEMA_VERSIONS
from flopkb.plural import count

from .fmt import paragraph
from .sources import ROOT, Sources


def _rows(kb: KnowledgeBase) -> list[Any]:
    return [row for c in kb.classes.values() for row in c.flop.hardware_parameters]


def _basis(kb: KnowledgeBase) -> str:
    by = Counter(row.basis.value for row in _rows(kb))
    order = ("cited", "derived", "unverified", "measured")
    return ", ".join(f"{by[b]} {b}" for b in order if by[b])


def block_kb_counts(src: Sources) -> str:
    """Records by kind, claims by basis, rows linking an experiment."""
    kb = src.kb
    rows = _rows(kb)
    linked = sum(1 for row in rows if row.verify is not None and row.verify.runs)
    excused = sum(1 for row in rows if row.verify is not None and not row.verify.runs)
    return paragraph(
        f"`records/` holds {len(kb.records)} records: {len(kb.classes)} classes, "
        f"{len(kb.accelerators)} accelerators, {len(kb.quantities)} quantities, "
        f"{len(kb.sources)} sources, {len(kb.architectures)} architectures and "
        f"{len(kb.evidence)} evidence records written by "
        f"`flopkb verify`. {len(rows)} claim rows; by basis: {_basis(kb)}; "
        f"{count(linked, 'row links', 'rows link')} a `verify.experiment`, "
        f"{count(excused, 'row says', 'rows say')} `verify.not_applicable` (no single GPU "
        "judges it by design).")


def block_graph_status(src: Sources) -> str:
    """`flopkb graph status` on the bundled KB, summarised from the library's answer (the text
    output draws the same sections as tables)."""
    result = status(KBGraph.from_kb(src.kb))
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
    `datetime.date`."""
    paths = sorted((root / "records").rglob("*.yaml"))
    dated = sum(
        1 for p in paths if _has_date(yaml.load(p.read_text(encoding="utf-8"), yaml.SafeLoader))
    )
    return f"{dated} of the {len(paths)} bundled records"


def accepted_versions() -> str:
    """The accepted schema versions as docs list them inline: "1, 2 and 3"."""
    versions = [str(v) for v in sorted(ACCEPTED_SCHEMA_VERSIONS)]
    if len(versions) == 1:
        return versions[0]
    return ", ".join(versions[:-1]) + f" and {versions[-1]}"


def block_dated_records(src: Sources) -> str:
    """docs/validate.md's "(N of the M bundled records)" that PyYAML's SafeLoader gives dates."""
    return dated_records(src.root)


def block_schema_versions(src: Sources) -> str:
    """docs/validate.md's "(1, 2, 3 and 4)": the versions the validator accepts."""
    return accepted_versions()
