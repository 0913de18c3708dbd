"""Signed evidence: SSH signatures as git makes them (`ssh-keygen -Y sign` / `-Y verify`).

Why SSH signatures: no new Python dependency (OpenSSH's ssh-keygen is on every machine that
pushes to git over SSH), the keys are the ones git already signs commits with
(`gpg.format = ssh`), and the trust list is git's own `allowed_signers` format, kept in the KB
(`<kb>/allowed_signers`) and reviewed like any other file.

What is signed: the canonical serialisation of the evidence record, `canonical(record)`: the
record's JSON form (`model_dump(mode="json")`) with sorted keys, no insignificant whitespace,
UTF-8. It covers every field, so any edit to a value breaks the signature, while YAML layout,
comments and the schema header do not. The signature (an armoured SSHSIG, namespace
`flopkb-evidence`) is stored beside the record as `<id>.yaml.sig`.

ssh-keygen is called with an argument list (never through a shell), a timeout, data on stdin,
and paths checked first; a signature file is read with a size limit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from flopkb.atomic import atomic_write_text
from flopkb.model import EvidenceRecord

NAMESPACE = "flopkb-evidence"
ALLOWED_SIGNERS = "allowed_signers"
SIG_SUFFIX = ".sig"
TIMEOUT_S = 20.0
# an SSHSIG of an ed25519 or RSA-4096 key is well under 4 KiB armoured
MAX_SIG_BYTES = 64 * 1024
MAX_SIGNERS_BYTES = 1024 * 1024


class SigningError(RuntimeError):
    """A key, a signature or ssh-keygen itself that cannot be used; one line, no traceback."""


@dataclass(frozen=True)
class Checked:
    """The outcome of verifying one record's signature."""

    ok: bool
    signer: str | None
    why: str


def canonical(record: EvidenceRecord) -> bytes:
    """The bytes a signature covers (module docstring)."""
    data = record.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def sig_path(record_file: Path) -> Path:
    return record_file.with_name(record_file.name + SIG_SUFFIX)


def ssh_keygen() -> str:
    """The ssh-keygen on PATH (SigningError without one)."""
    found = shutil.which("ssh-keygen")
    if found is None:
        raise SigningError("ssh-keygen was not found on PATH (OpenSSH 8.1 or later signs and "
                           "verifies evidence)")
    return found


def _regular_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise SigningError(f"{what} {path} is not a regular file")
    return path


def _run(args: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(args, input=data, capture_output=True, timeout=TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SigningError(f"ssh-keygen did not finish within {TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise SigningError(f"cannot run ssh-keygen: {exc}") from None


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:200] if text else "no message"


def sign(record: EvidenceRecord, record_file: Path, key: Path) -> Path:
    """Sign `record` (stored at `record_file`) with the private key `key`; writes
    `<record_file>.sig` atomically and returns its path."""
    _regular_file(key, "signing key")
    # ssh-keygen signs stdin and writes the armoured signature to stdout when given no file
    done = _run([ssh_keygen(), "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE],
                canonical(record))
    if done.returncode != 0 or b"BEGIN SSH SIGNATURE" not in done.stdout:
        raise SigningError(f"ssh-keygen could not sign with {key}: {_first_line(done.stderr)}")
    return atomic_write_text(sig_path(record_file), done.stdout.decode("ascii"))


def read_signature(record_file: Path) -> str | None:
    """The signature beside `record_file`, or None when there is none."""
    path = sig_path(record_file)
    if not path.exists():
        return None
    if path.is_symlink() or not path.is_file():
        raise SigningError(f"{path.name} is not a regular file")
    with path.open("rb") as fh:
        raw = fh.read(MAX_SIG_BYTES + 1)
    if len(raw) > MAX_SIG_BYTES:
        raise SigningError(f"{path.name} is over {MAX_SIG_BYTES // 1024} KiB: not a signature")
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise SigningError(f"{path.name} is not an armoured SSH signature") from None


def allowed_signers(kb_root: Path) -> Path:
    """The KB's allowed-signers file (git's format), checked to be a bounded regular file."""
    path = kb_root / ALLOWED_SIGNERS
    if path.is_symlink() or not path.is_file():
        raise SigningError(f"the KB has no {ALLOWED_SIGNERS} file (git's format: "
                           "`<principal> <key type> <public key>` per line)")
    if path.stat().st_size > MAX_SIGNERS_BYTES:
        raise SigningError(f"{ALLOWED_SIGNERS} is over {MAX_SIGNERS_BYTES // 2**20} MiB")
    return path


def verify(record: EvidenceRecord, signature: str, signers: Path) -> Checked:
    """Whether `signature` is a valid signature of `record` by a key in `signers`."""
    keygen = ssh_keygen()
    with tempfile.TemporaryDirectory(prefix="flopkb-sig-") as tmp:
        sig = Path(tmp) / "evidence.sig"
        sig.write_text(signature, encoding="ascii")
        found = _run([keygen, "-Y", "find-principals", "-s", str(sig), "-f", str(signers)], b"")
        principals = found.stdout.decode("utf-8", "replace").splitlines()
        if found.returncode != 0 or not principals:
            return Checked(False, None, "signed by a key that is not in allowed_signers "
                           f"({_first_line(found.stderr)})")
        principal = principals[0]
        done = _run([keygen, "-Y", "verify", "-f", str(signers), "-I", principal, "-n",
                     NAMESPACE, "-s", str(sig)], canonical(record))
    if done.returncode != 0:
        return Checked(False, principal, "the signature does not match the record "
                       f"({_first_line(done.stderr)})")
    return Checked(True, principal, f"good signature by {principal}")
