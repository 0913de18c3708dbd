"""`flopkb extract RECORD`: candidate hardware-parameter rows from a record's prose, as YAML."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from flopkb.cli.common import FormatOption, OutputFormat, emit_json, fail, kb_root
from flopkb.extract import propose, to_yaml
from flopkb.hardware import UnknownRecord
from flopkb.kb import load_kb


def extract(
    ctx: typer.Context,
    record: Annotated[str, typer.Argument(help="class record id, e.g. mamba2-ssd")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Propose rows (verbatim effect, lifted magnitude, guessed quantity, basis unverified)."""
    kb, _ = load_kb(kb_root(ctx))
    found = kb.classes.get(record)
    if found is None:
        fail(str(UnknownRecord("class", record, kb.classes)))
    candidates = propose(found)
    if fmt is OutputFormat.json:
        emit_json([c.as_row() for c in candidates])
        return
    sys.stdout.write(
        f"# {len(candidates)} candidate rows for {record}; paste under flop.hardware_parameters\n"
    )
    sys.stdout.write(to_yaml(candidates))
