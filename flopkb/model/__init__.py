"""pydantic v2 models of every record kind; `parse_record` picks the model by `kind`."""

from flopkb.model.accelerator import AcceleratorRecord, Spec
from flopkb.model.architecture import ArchitectureRecord, LayerType
from flopkb.model.base import (
    ACCEPTED_SCHEMA_VERSIONS,
    CURRENT_SCHEMA_VERSION,
    HistoryEntry,
    Kind,
    RecordBase,
    SourceRef,
)
from flopkb.model.classes import (
    ArchitectureValue,
    Basis,
    ClassRecord,
    DerivedFrom,
    Flop,
    HardwareParameter,
    VerifyLink,
)
from flopkb.model.evidence import EvidenceRecord, Judged, Measured, Round, Verdict
from flopkb.model.quantity import QuantityRecord
from flopkb.model.source import SourceRecord, SourceType

Record = (
    ClassRecord | AcceleratorRecord | QuantityRecord | SourceRecord | EvidenceRecord
    | ArchitectureRecord
)

MODEL_BY_KIND: dict[Kind, type[RecordBase]] = {
    Kind.operator: ClassRecord,
    Kind.model: ClassRecord,
    Kind.accelerator: AcceleratorRecord,
    Kind.quantity: QuantityRecord,
    Kind.source: SourceRecord,
    Kind.evidence: EvidenceRecord,
    Kind.architecture: ArchitectureRecord,
}

FOLDER_BY_KIND: dict[Kind, str] = {
    Kind.operator: "classes",
    Kind.model: "classes",
    Kind.accelerator: "accelerators",
    Kind.quantity: "quantities",
    Kind.source: "sources",
    Kind.evidence: "evidence",
    Kind.architecture: "architectures",
}

__all__ = [
    "ACCEPTED_SCHEMA_VERSIONS",
    "CURRENT_SCHEMA_VERSION",
    "FOLDER_BY_KIND",
    "MODEL_BY_KIND",
    "AcceleratorRecord",
    "ArchitectureRecord",
    "ArchitectureValue",
    "Basis",
    "ClassRecord",
    "DerivedFrom",
    "EvidenceRecord",
    "Flop",
    "HardwareParameter",
    "HistoryEntry",
    "Judged",
    "Kind",
    "LayerType",
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
