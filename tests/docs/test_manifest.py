"""bench/results/MANIFEST.yaml is the index of the current results: every file it names exists,
every block reads exactly the roles the manifest gives it, and every file of bench/results/ is
named by it (a file nothing reads or cites belongs in history/, whose README lists it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tools.docs import pages
from tools.docs.sources import Sources

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load((RESULTS / "MANIFEST.yaml").read_text(encoding="utf-8"))


def _named(manifest: dict) -> set[str]:
    names = set(manifest.get("kept") or {})
    for roles in manifest["blocks"].values():
        for value in roles.values():
            names |= set(value) if isinstance(value, list) else {value}
    return names


def test_every_file_the_manifest_names_exists(manifest: dict) -> None:
    assert [n for n in sorted(_named(manifest)) if not (RESULTS / n).exists()] == []


def test_every_results_file_is_named_by_the_manifest(manifest: dict) -> None:
    present = {p.name for p in RESULTS.iterdir()} - {"MANIFEST.yaml", "history"}
    assert sorted(present - _named(manifest)) == []


def test_the_manifest_names_only_blocks_the_generator_has(manifest: dict) -> None:
    assert set(manifest["blocks"]) <= set(pages.BLOCKS)


def test_each_block_reads_exactly_the_roles_the_manifest_gives_it(manifest: dict) -> None:
    src = Sources()
    for fn in pages.BLOCKS.values():
        fn(src)
    declared = {(block, role) for block, roles in manifest["blocks"].items() for role in roles}
    assert src.read == declared


def test_history_has_a_readme_naming_each_file() -> None:
    history = RESULTS / "history"
    readme = (history / "README.md").read_text(encoding="utf-8")
    for path in history.iterdir():
        if path.name == "README.md":
            continue
        stem = re.sub(r"\.(gpu\.txt|json|log)$", "", path.name)
        assert stem in readme, path.name
