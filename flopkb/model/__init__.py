"""pydantic v2 models of every record kind; `parse_record` picks the model by `kind`."""

from flopkb.model.accelerator import AcceleratorRecord, Spec
from flopkb.model.base import (
    ACCEPTED_SCHEMA_VERSIONS,
    CURRENT_SCHEMA_VERSION,
    HistoryEntry,
    Kind,
    RecordBase,
    SourceRef,
)
from flopkb.model.classes import Basis, ClassRecord, Flop, HardwareParameter, VerifyLink
from flopkb.model.evidence import EvidenceRecord, Judged, Measured, Round, Verdict
from flopkb.model.quantity import QuantityRecord
from flopkb.model.source import SourceRecord, SourceType

Record = ClassRecord | AcceleratorRecord | QuantityRecord | SourceRecord | EvidenceRecord

MODEL_BY_KIND: dict[Kind, type[RecordBase]] = {
    Kind.operator: ClassRecord,
    Kind.model: ClassRecord,
    Kind.accelerator: AcceleratorRecord,
    Kind.quantity: QuantityRecord,
    Kind.source: SourceRecord,
    Kind.evidence: EvidenceRecord,
}

FOLDER_BY_KIND: dict[Kind, str] = {
    Kind.operator: "classes",
    Kind.model: "classes",
    Kind.accelerator: "accelerators",
    Kind.quantity: "quantities",
    Kind.source: "sources",
    Kind.evidence: "evidence",
}

__all__ = [
    "ACCEPTED_SCHEMA_VERSIONS",
    "CURRENT_SCHEMA_VERSION",
    "FOLDER_BY_KIND",
    "MODEL_BY_KIND",
    "AcceleratorRecord",
    "Basis",
    "ClassRecord",
    "EvidenceRecord",
    "Flop",
    "HardwareParameter",
    "HistoryEntry",
    "Judged",
    "Kind",
    "Measured",
    "QuantityRecord",
    "Record",
    "RecordBase",
    "Round",
    "SourceRecord",
    "SourceRef",
    "SourceType",
    "Spec",
    "Verdict",
    "VerifyLink",
]
