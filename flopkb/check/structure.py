"""Structure across files: ids equal stems, kinds in their folders, ids unique, versions known."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.load import compose_node, locate
from flopkb.model import ACCEPTED_SCHEMA_VERSIONS, FOLDER_BY_KIND, ClassRecord, EvidenceRecord
from flopkb.rules import finding_of


@check
def id_matches_file(ctx: CheckContext) -> Iterator[Finding]:
    """FKB125: a record's id is its file stem (so ids map to files without a lookup)."""
    for rid, path in ctx.kb.files.items():
        if path.stem != rid:
            yield ctx.finding(
                "FKB125", rid, ("id",),
                f"id {rid!r} differs from the file stem {path.stem!r}",
                f"rename the file to {rid}{path.suffix} or the id to {path.stem!r}",
            )  # fmt: skip


@check
def kind_in_folder(ctx: CheckContext) -> Iterator[Finding]:
    """FKB126: in a `records/` tree, each kind lives in its folder (classes, accelerators, ...)."""
    for rid, record in ctx.kb.records.items():
        path = ctx.kb.files[rid]
        if "records" not in path.parts[:-1]:
            continue
        folder = FOLDER_BY_KIND[record.kind]
        if path.parent.name != folder:
            yield ctx.finding(
                "FKB126", rid, ("kind",),
                f"a {record.kind.value} record belongs in records/{folder}/, "
                f"found in {path.parent.name}/",
            )  # fmt: skip


@check
def unique_ids(ctx: CheckContext) -> Iterator[Finding]:
    """FKB127: two files define the same id; the finding sits in the second and names the first."""
    for rid, kept, other in ctx.kb.duplicates:
        line, column = locate(compose_node(Path(other), ctx.kb.limits), ("id",))
        yield finding_of(
            "FKB127", other, line, column, rid,
            f"id {rid!r} is already defined in {kept}", "ids are unique across the KB",
        )  # fmt: skip


@check
def schema_versions(ctx: CheckContext) -> Iterator[Finding]:
    """FKB128/FKB129: the validator accepts the record's schema_version, and the record fits it."""
    accepted = ", ".join(str(v) for v in sorted(ACCEPTED_SCHEMA_VERSIONS))
    for rid, record in ctx.kb.records.items():
        if record.schema_version not in ACCEPTED_SCHEMA_VERSIONS:
            yield ctx.finding(
                "FKB128", rid, ("schema_version",),
                f"schema_version {record.schema_version} is not accepted (accepted: {accepted})",
                "see schema/CHANGELOG.md",
            )  # fmt: skip
        elif (
            record.schema_version == 1
            and isinstance(record, ClassRecord)
            and record.flop.hardware_parameters
        ):
            yield ctx.finding(
                "FKB129", rid, ("flop", "hardware_parameters"),
                "flop.hardware_parameters needs schema_version 2 (added in version 2)",
                "set schema_version: 2",
            )  # fmt: skip
        elif (
            record.schema_version < 3
            and isinstance(record, EvidenceRecord)
            and (record.judgements or record.implementation_sensitive)
        ):
            yield ctx.finding(
                "FKB129", rid, ("judgements",),
                "judgements and implementation_sensitive need schema_version 3 (added in "
                "version 3)", "set schema_version: 3",
            )  # fmt: skip
        elif (
            record.schema_version < 4
            and isinstance(record, EvidenceRecord)
            and (record.rounds or record.tolerance is not None
                 or any(j.rounds for j in record.judgements))
        ):
            yield ctx.finding(
                "FKB129", rid, ("rounds",),
                "rounds and tolerance need schema_version 4 (added in version 4)",
                "set schema_version: 4",
            )  # fmt: skip
