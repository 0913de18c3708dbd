"""The resolved knowledge base: validated records by id, with the file each came from.

INTERIM: this loader is a placeholder for the located loader and checks of issue 2 (owned by the
validation helper), which keeps this API: `load_kb(root) -> (KnowledgeBase, findings)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from flopkb.findings import Finding, Severity
from flopkb.model import (
    MODEL_BY_KIND,
    AcceleratorRecord,
    ClassRecord,
    EvidenceRecord,
    HardwareParameter,
    Kind,
    QuantityRecord,
    Record,
    SourceRecord,
)


@dataclass
class KnowledgeBase:
    """Records by id. Only records that passed the schema are here; findings say what did not."""

    root: Path | None
    records: dict[str, Record] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)

    def _of(self, cls: type) -> dict[str, Record]:
        return {rid: r for rid, r in self.records.items() if isinstance(r, cls)}

    @property
    def classes(self) -> dict[str, ClassRecord]:
        return self._of(ClassRecord)  # type: ignore[return-value]

    @property
    def accelerators(self) -> dict[str, AcceleratorRecord]:
        return self._of(AcceleratorRecord)  # type: ignore[return-value]

    @property
    def quantities(self) -> dict[str, QuantityRecord]:
        return self._of(QuantityRecord)  # type: ignore[return-value]

    @property
    def sources(self) -> dict[str, SourceRecord]:
        return self._of(SourceRecord)  # type: ignore[return-value]

    @property
    def evidence(self) -> dict[str, EvidenceRecord]:
        return self._of(EvidenceRecord)  # type: ignore[return-value]

    def claims(self) -> Iterator[tuple[str, ClassRecord, HardwareParameter]]:
        """Every claim as (global id `<record>/<row>`, its class record, its row)."""
        for rid, record in sorted(self.classes.items()):
            for row in record.flop.hardware_parameters:
                yield f"{rid}/{row.id}", record, row

    def where(self, record_id: str, *path: str | int) -> tuple[str, int, int]:
        """File, line and column of the YAML node at `path` in a record (INTERIM: line 1)."""
        return str(self.files.get(record_id, "")), 1, 1

    def claim(self, claim_id: str) -> tuple[ClassRecord, HardwareParameter] | None:
        record_id, _, row_id = claim_id.partition("/")
        record = self.classes.get(record_id)
        if record is None:
            return None
        return next(((record, r) for r in record.flop.hardware_parameters if r.id == row_id), None)


def record_files(root: Path) -> list[Path]:
    records = root / "records" if (root / "records").is_dir() else root
    return sorted(p for p in records.rglob("*") if p.suffix in {".yaml", ".yml"} and p.is_file())


def load_kb(root: Path) -> tuple[KnowledgeBase, list[Finding]]:
    kb = KnowledgeBase(root=root)
    findings: list[Finding] = []
    for path in record_files(root):
        data = yaml.load(path.read_text(encoding="utf-8-sig"), Loader=yaml.CSafeLoader)
        try:
            model = MODEL_BY_KIND[Kind(data["kind"])]
            record = model.model_validate(data)
        except (ValidationError, KeyError, ValueError) as exc:
            findings.append(Finding("FKB100", Severity.error, str(path), 1, 1, None, str(exc)))
            continue
        kb.records[record.id] = record  # type: ignore[assignment]
        kb.files[record.id] = path
    return kb, findings
