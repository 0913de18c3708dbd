"""Signed evidence end to end: a throwaway ed25519 key signs, `validate --require-signed` checks.

Needs OpenSSH's ssh-keygen (8.1 or later, for -Y sign); skipped without it."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.evidence import store as ev_io
from flopkb.model import EvidenceRecord
from tests.unit.verify_fixtures import stored_ratio, write_kb

runner = CliRunner()
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
WHEN = dt.datetime(2026, 11, 30, 3, 15, tzinfo=dt.timezone.utc)


def _key(folder: Path, name: str) -> tuple[Path, str]:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True, timeout=30)
    kind, public = (folder / f"{name}.pub").read_text().split()[:2]
    return key, f"{name}@example.org {kind} {public}\n"


def _kb(tmp_path: Path) -> Path:
    root = write_kb(tmp_path / "kb")
    ev = EvidenceRecord(
        schema_version=3, id="ev-1", kind="evidence", title="t",
        history=[{"date": WHEN.date(), "by": "tests", "note": "n"}], claim="test-class/int8",
        experiment="int8-native-vs-emulated", accelerator="h200-sxm", implementation="bundled",
        kernel_hashes={"a": "b"}, machine={"gpu": "NVIDIA H200"}, verdict="confirmed",
        command="flopkb verify --gpu", timestamp=WHEN, **stored_ratio("confirmed"))
    ev_io.write_evidence(ev, root / "records" / "evidence")
    return root


def _signature_findings(root: Path, *flags: str) -> list[tuple[str, str]]:
    result = runner.invoke(app, ["--kb", str(root), "validate", "--format", "json", *flags])
    data = json.loads(result.stdout)
    return sorted((f["rule"], f["record"]) for f in data["errors"]
                  if f["rule"] in {"FKB515", "FKB516"})


def test_require_signed_end_to_end(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    key, signer = _key(tmp_path, "lab")
    (root / "allowed_signers").write_text(signer)
    # off by default; unsigned evidence is FKB515 when asked for
    assert _signature_findings(root) == []
    assert _signature_findings(root, "--require-signed") == [("FKB515", "ev-1")]

    signed = runner.invoke(app, ["--kb", str(root), "evidence", "sign", "ev-1", "--key", str(key)])
    assert signed.exit_code == 0, signed.output
    sig = root / "records" / "evidence" / "ev-1.yaml.sig"
    assert sig.read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    assert _signature_findings(root, "--require-signed") == []
    # the config key turns it on too
    (root / "flopkb.toml").write_text("require_signed = true\n")
    assert _signature_findings(root) == []

    # an edited verdict breaks the signature (and no longer re-derives: FKB510, not shown here)
    path = root / "records" / "evidence" / "ev-1.yaml"
    text = path.read_text()
    path.write_text(text.replace("  value: 2.0", "  value: 2.1", 1))
    assert _signature_findings(root) == [("FKB516", "ev-1")]
    # comments and layout are not signed: the canonical form is the record's values
    path.write_text("# reviewed\n" + text)
    assert _signature_findings(root) == []


def test_a_key_outside_allowed_signers_is_refused(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    key, _ = _key(tmp_path, "stranger")
    _, lab = _key(tmp_path, "lab")
    (root / "allowed_signers").write_text(lab)
    signed = runner.invoke(app, ["--kb", str(root), "evidence", "sign", "ev-1", "--key", str(key)])
    assert signed.exit_code == 0, signed.output
    assert _signature_findings(root, "--require-signed") == [("FKB516", "ev-1")]
    # without an allowed_signers file nothing can verify
    (root / "allowed_signers").unlink()
    assert _signature_findings(root, "--require-signed") == [("FKB516", "ev-1")]


def test_sign_refuses_a_missing_key_and_an_unknown_record(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    missing = runner.invoke(app, ["--kb", str(root), "evidence", "sign", "ev-1", "--key",
                                  str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such key file" in missing.output
    key, _ = _key(tmp_path, "lab")
    unknown = runner.invoke(app, ["--kb", str(root), "evidence", "sign", "ev-9", "--key",
                                  str(key)])
    assert unknown.exit_code == 2 and "no evidence record" in unknown.output
    assert yaml.safe_load((root / "records" / "evidence" / "ev-1.yaml").read_text())["id"] == "ev-1"


def test_verify_refuses_a_missing_sign_key_before_anything_runs(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    result = runner.invoke(app, ["--kb", str(root), "verify", "--gpu", "--sign-key",
                                 str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such signing key" in result.output
    (root / "flopkb.toml").write_text('sign_key = "missing-key"\n')
    result = runner.invoke(app, ["--kb", str(root), "verify", "--gpu"])
    assert result.exit_code == 2 and "no such signing key" in result.output
