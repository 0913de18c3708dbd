"""Signed evidence (`validate --require-signed`, config `require_signed = true`): every evidence
record carries a signature beside it (`<id>.yaml.sig`) by a key in the KB's `allowed_signers`
(`flopkb.evidence.signing`). Not a registered check: it runs only when asked for, since a KB that
does not share evidence has no reason to sign it."""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.check.base import CheckContext
from flopkb.evidence import signing
from flopkb.findings import Finding


def signature_findings(ctx: CheckContext) -> Iterator[Finding]:
    """FKB515/FKB516 over every evidence record of the KB."""
    kb = ctx.kb
    signers, why = None, None
    try:
        signers = signing.allowed_signers(kb.root) if kb.root is not None else None
        why = None if signers is not None else "the KB has no root folder"
    except signing.SigningError as exc:
        why = str(exc)
    for eid, ev in sorted(kb.evidence.items()):
        yield from ctx.isolated(eid, _one(ctx, eid, ev, signers, why))


def _one(ctx: CheckContext, eid: str, ev, signers, why: str | None) -> Iterator[Finding]:
    file = ctx.kb.files.get(eid)
    if file is None:
        return
    try:
        signature = signing.read_signature(file)
    except signing.SigningError as exc:
        yield ctx.finding("FKB516", eid, ("id",), str(exc))
        return
    if signature is None:
        yield ctx.finding("FKB515", eid, ("id",), f"no signature {file.name}.sig beside the record",
                          hint=f"sign it: flopkb evidence sign {file.name} --key PATH")
        return
    if signers is None:
        yield ctx.finding("FKB516", eid, ("id",), f"cannot verify the signature: {why}")
        return
    try:
        checked = signing.verify(ev, signature, signers)
    except signing.SigningError as exc:
        yield ctx.finding("FKB516", eid, ("id",), f"cannot verify the signature: {exc}")
        return
    if not checked.ok:
        yield ctx.finding("FKB516", eid, ("id",), checked.why,
                          hint="re-sign it with a key listed in allowed_signers, after checking "
                          "what changed")
