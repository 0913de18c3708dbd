"""One test per case folder: `tests/cases/{valid,invalid}/<case>/` is a whole small KB.

A valid case has no error at all and no warning of the validator's own rules. An invalid case lists
its findings in `expected.yaml` (rule, file, line), compared exactly. Cases too big to commit (an
oversize file, 10^5 levels of nesting) are generated here into a temporary folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from flopkb.check import load_checks
from flopkb.check.base import RULES
from flopkb.findings import Finding
from flopkb.load import DEFAULT_MAX_BYTES, LOAD_RULES
from flopkb.validate import validate

CASES = Path(__file__).parent / "cases"
# Codes declared by the loader and the structure / reference / provenance / formula checks. Cases
# compare exactly on these; findings of other rule modules (units, evidence, graph) are left to
# their own tests, so those modules can evolve without rewriting every case here.
_OWN_PREFIXES = ("FKB1", "FKB2", "FKB3")
_OWN_FORMULA_CODES = {"FKB401", "FKB402", "FKB403", "FKB404", "FKB405"}


def own_codes() -> set[str]:
    load_checks()
    codes = {c for c in RULES if c.startswith(_OWN_PREFIXES)} | set(LOAD_RULES) | _OWN_FORMULA_CODES
    return codes - {"FKB199"}


def rows(findings: list[Finding], case: Path) -> list[dict[str, object]]:
    """(rule, file relative to the case folder, line) of every finding with an owned code."""
    mine = own_codes()
    out = []
    for f in findings:
        if f.rule not in mine:
            continue
        rel = Path(f.file).resolve().relative_to(case.resolve()).as_posix() if f.file else ""
        out.append({"rule": f.rule, "file": rel, "line": f.line})
    return sorted(out, key=lambda r: (r["file"], r["line"], r["rule"]))


VALID = sorted(p for p in (CASES / "valid").iterdir() if p.is_dir())
INVALID = sorted(p for p in (CASES / "invalid").iterdir() if p.is_dir())
PWNED = Path("/tmp/flopkb-pwned-marker")


@pytest.mark.parametrize("case", VALID, ids=lambda p: p.name)
def test_valid_case(case: Path) -> None:
    result = validate(case)
    assert [f.message for f in result.findings if f.rule == "FKB199"] == []
    assert result.errors == []
    assert rows(result.warnings, case) == []
    assert result.ok


@pytest.mark.parametrize("case", INVALID, ids=lambda p: p.name)
def test_invalid_case(case: Path) -> None:
    PWNED.unlink(missing_ok=True)
    expected = yaml.safe_load((case / "expected.yaml").read_text(encoding="utf-8"))["findings"]
    result = validate(case)
    assert [f.message for f in result.findings if f.rule == "FKB199"] == []
    assert rows(result.findings, case) == sorted(
        expected, key=lambda r: (r["file"], r["line"], r["rule"])
    )
    assert expected, "an invalid case expects at least one finding"
    assert all(f.line >= 1 and f.column >= 1 for f in result.findings if f.rule in own_codes())
    # `!!python/object/apply:os.system` and `__import__` payloads touch this file if they ever run
    assert not PWNED.exists()


def _oversize(folder: Path) -> tuple[str, int]:
    path = folder / "records/sources/big.yaml"
    path.write_text(
        "schema_version: 2\nnote: |\n" + "  lorem ipsum\n" * (DEFAULT_MAX_BYTES // 12 + 1)
    )
    return "FKB102", 0


def _deep_flow(folder: Path) -> tuple[str, int]:
    (folder / "records/sources/deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    return "FKB109", 1


def _deep_block(folder: Path) -> tuple[str, int]:
    (folder / "records/sources/deep.yaml").write_text("a:\n  " + "- " * 100_000 + "x\n")
    return "FKB109", 2


GENERATED: dict[str, Callable[[Path], tuple[str, int]]] = {
    "oversize-file": _oversize,
    "deep-flow-nesting-1e5": _deep_flow,
    "deep-block-nesting-1e5": _deep_block,
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_case(name: str, tmp_path: Path) -> None:
    shutil.copytree(CASES / "valid" / "small-kb", tmp_path / "kb")
    folder = tmp_path / "kb"
    code, line = GENERATED[name](folder)
    result = validate(folder)
    bad = [f for f in result.findings if f.rule.startswith("FKB1")]
    assert [(f.rule, f.line) for f in bad] == [(code, line)]
    # the broken file hides nothing: the valid neighbours are still checked and clean
    assert result.records == 8
    assert [f.rule for f in result.errors] == [code]


def test_every_rule_has_a_case() -> None:
    """Each rule code of the validator has a case (or, where a case cannot, a unit test)."""
    covered = {
        row["rule"]
        for case in INVALID
        for row in yaml.safe_load((case / "expected.yaml").read_text())["findings"]
    }
    covered |= {"FKB102", "FKB109"}
    # FKB101 (unreadable file) and FKB199 (a crashing check) are covered in tests/unit, and so are
    # the walk's FKB130-FKB134 (FIFOs, sockets, links, unreadable folders: git holds none of them)
    walk = {"FKB130", "FKB131", "FKB132", "FKB133", "FKB134"}
    assert own_codes() - covered - {"FKB101", "FKB199"} - walk == set()
