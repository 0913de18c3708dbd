"""`flopkb evidence sign`: sign evidence records already in the KB (SSH signatures)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    fail,
    failing_on,
    kb_root,
    safe_writes,
    write_policy,
)
from flopkb.cli.help import example
from flopkb.escape import visible
from flopkb.evidence import signing
from flopkb.kb import load_kb

app = typer.Typer(help="Evidence records: sign them for a shared KB.", no_args_is_help=True)


@app.command(epilog=example(
    "flopkb evidence sign records/evidence/ev-*.yaml --key ~/.ssh/id_ed25519"))
def sign(
    ctx: typer.Context,
    evidence: Annotated[list[str], typer.Argument(help="evidence ids or their files in the KB")],
    key: Annotated[Path, typer.Option("--key", help="SSH private key (ssh-keygen -Y sign -f)")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Write `<id>.yaml.sig` beside each record: an SSH signature (namespace flopkb-evidence) of
    the record's canonical form, checked by `validate --require-signed`."""
    if not key.is_file():
        fail(f"no such key file: {key}")
    root = kb_root(ctx)
    kb, _ = load_kb(root)
    targets = []
    for given in evidence:
        # an id, or a path whose stem is the id; either way the file is the one the KB loaded
        eid = Path(given).stem if given.endswith(".yaml") else given
        if eid not in kb.evidence or eid not in kb.files:
            fail(f"no evidence record {given!r} in the KB at {root}")
        targets.append(eid)
    written = []
    with safe_writes(write_policy(ctx, records=True)), failing_on(signing.SigningError):
        for eid in targets:
            written.append(signing.sign(kb.evidence[eid], kb.files[eid], key))
    if fmt is OutputFormat.json:
        return emit_json({"signed": [str(p) for p in written]})
    for path in written:
        console.print(f"signed: {visible(str(path))}", markup=False, highlight=False)
