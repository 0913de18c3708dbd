"""The generated pages of docs/ are what the generator writes: every figure block equals its block
function's output on the committed sources, docs/rules.md equals the rule registry's table, each
block stands on one page only, and the blocks follow their sources (change a figure in a copy of
the evidence or a results file, and the page changes with it)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

import flopkb.check  # noqa: F401 - registers every rule
from flopkb.rules import RULES
from tools.docs import pages, rules, verdicts
from tools.docs.fmt import band
from tools.docs.markers import BLOCK, blocks_in, regenerate
from tools.docs.sources import Sources

ROOT = Path(__file__).resolve().parents[2]
# Pages whose every figure is generated: hand-written text between the blocks holds none.
RESULT_PAGES = ("docs/results.md", "docs/kernels.md", "docs/performance.md")
# A measured figure with its unit, as the blocks write them (1.38x, 0.49 s, 4266 GB/s, 37.8%).
UNITS = r"(?:x|ms|µs|s|TFLOP/s|GB/s|TB/s|GiB|MiB|%)"
FIGURE = re.compile(rf"(?<![\w.=-])\d+(?:\.\d+)?\s?{UNITS}(?![\w/])")


@pytest.fixture(scope="module")
def src() -> Sources:
    return Sources()


@pytest.mark.parametrize("page", pages.MARKED)
def test_every_block_of_a_page_is_what_the_generator_writes(page: str, src: Sources) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert blocks_in(text), f"{page} holds no generated block"
    # on failure: python -m tools.docs (and commit the result)
    assert pages.generated(page, text, src) == text


def test_the_rule_page_is_the_registry(src: Sources) -> None:
    text = (ROOT / rules.PATH).read_text(encoding="utf-8")
    # on failure: python -m tools.docs (and commit the result)
    assert pages.generated(rules.PATH, text, src) == text
    assert all(f"| {code} |" in text for code in RULES)
    assert len(re.findall(r"^\| FKB\d+ \|", text, re.MULTILINE)) == len(RULES)


def test_the_rule_table_is_written_once() -> None:
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if path.relative_to(ROOT).as_posix() == rules.PATH:
            continue
        rows = re.findall(r"^\| FKB\d+ \|", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert rows == [], f"{path.name} repeats rows of docs/rules.md"


def test_each_block_stands_on_exactly_one_page() -> None:
    seen: dict[str, list[str]] = {}
    for page in (*pages.MARKED, "README.md"):
        for name in blocks_in((ROOT / page).read_text(encoding="utf-8")):
            seen.setdefault(name, []).append(page)
    assert {name: where for name, where in seen.items() if len(where) != 1} == {}
    assert set(seen) == set(pages.BLOCKS)


@pytest.mark.parametrize("page", RESULT_PAGES)
def test_no_figure_outside_a_generated_block(page: str) -> None:
    outside = BLOCK.sub("", (ROOT / page).read_text(encoding="utf-8"))
    assert FIGURE.findall(outside) == []
    for claim in verdicts.CLAIMS:
        assert f"| `{claim}` (" not in outside, claim


def test_readme_holds_no_results() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert blocks_in(text) == []
    for claim in verdicts.CLAIMS:
        assert f"| `{claim}`" not in text, claim
    assert "TFLOP/s median" not in text
    assert not re.search(r"^\| (SSD chunked|Triton bf16 GEMM|INT8 GEMM)", text, re.MULTILINE)


def test_readme_is_a_short_users_page() -> None:
    # what flopkb is, install, an example, the commands, links: the rest lives under docs/
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250


def test_the_figure_pattern_finds_figures() -> None:
    # the test above is only as good as its pattern
    for figure in ("1.38x", "0.49 s", "4266 GB/s", "37.8%", "733 TFLOP/s", "2.1 GiB"):
        assert FIGURE.findall(f"took {figure} here") == [figure]
    for condition in ("N=128", "T=16K", "q256", "sm_90", "2-core"):
        assert FIGURE.findall(f"at {condition} here") == []


def _copy_sources(tmp_path: Path) -> None:
    # the model and verdict blocks read the whole KB: classes, quantities, sources too
    for folder in ("records", "bench/results"):
        shutil.copytree(ROOT / folder, tmp_path / folder)


def test_the_blocks_follow_their_sources(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    # the newest A2 evidence (the one the tables read); its first judgement is the verdict's
    ev = sorted((tmp_path / "records/evidence").glob("ev-mamba2-ssd--ssd-vs-fused-scan-*.yaml"))[-1]
    measured = yaml.safe_load(ev.read_text(encoding="utf-8"))["measured"]
    ev.write_text(ev.read_text().replace(f"value: {measured['value']}", "value: 5.12345"),
                  encoding="utf-8")
    dense = tmp_path / "bench/results/dense_h200.json"
    data = json.loads(dense.read_text())
    int8 = next(r for r in data["results"] if r["variant"] == "triton_int8")
    int8["tflops"] = 1234.0
    dense.write_text(json.dumps(data))
    src = Sources(root=tmp_path)
    results = (ROOT / "docs/results.md").read_text(encoding="utf-8")
    kernels = (ROOT / "docs/kernels.md").read_text(encoding="utf-8")
    new_results = regenerate(results, src, pages.BLOCKS)
    new_kernels = regenerate(kernels, src, pages.BLOCKS)
    assert f"| 5.12x {band(measured['low'], measured['high'])} |" in new_results
    assert "| 1234 TOPS |" in new_kernels
    assert new_results != results and new_kernels != kernels


def test_a_block_reads_the_file_the_manifest_names(tmp_path: Path) -> None:
    _copy_sources(tmp_path)
    manifest = tmp_path / "bench/results/MANIFEST.yaml"
    cpu = json.loads((tmp_path / "bench/results/cpu_times.json").read_text())
    cpu["suite_passed"] = 4321
    (tmp_path / "bench/results/cpu_times_other.json").write_text(json.dumps(cpu))
    # a new file changes nothing until the manifest names it
    assert "4321 passed" not in pages.BLOCKS["cpu-times"](Sources(root=tmp_path))
    text = manifest.read_text(encoding="utf-8").replace(
        "times: cpu_times.json                    # bench/cpu_times.py",
        "times: cpu_times_other.json")
    manifest.write_text(text, encoding="utf-8")
    assert "4321 passed" in pages.BLOCKS["cpu-times"](Sources(root=tmp_path))


def test_implementation_sensitive_claims_are_named_under_the_verdict_table(
        tmp_path: Path, src: Sources) -> None:
    # the pooled flag (flopkb.evidence.pooled): what `flopkb claims` shows
    sensitive = {c for c in verdicts.CLAIMS
                 if c in src.pooled and src.pooled[c].implementation_sensitive}
    block = verdicts.block_verdicts(src)
    if not sensitive:
        # the runs under the current kernels have none (2026-12-04): the page says so, and
        # there is no claim to take out of the sentence below
        assert "No claim is implementation-sensitive." in " ".join(block.split())
        pytest.skip("no committed claim is implementation-sensitive to take out of the sentence")
    sentence = block.split("Implementation-sensitive", 1)[1].replace("\n", " ")
    assert {c for c in verdicts.CLAIMS if f"`{c}`" in sentence} == sensitive
    for claim in sensitive:
        row = next(line for line in block.splitlines() if line.startswith(f"| `{claim}` ("))
        assert "**implementation-sensitive**" in row
    # flipping the flag in a copy of the evidence takes the claim out of the sentence
    _copy_sources(tmp_path)
    claim = sorted(sensitive)[0]
    stem = "ev-" + claim.replace("/", "--") + "-h200-sxm-"
    ev = next(p for p in sorted((tmp_path / "records/evidence").glob(stem + "*.yaml"))
              if "implementation_sensitive: true" in p.read_text(encoding="utf-8"))
    ev.write_text(ev.read_text().replace("implementation_sensitive: true",
                                         "implementation_sensitive: false"), encoding="utf-8")
    changed = verdicts.block_verdicts(Sources(root=tmp_path))
    assert f"`{claim}`" not in changed.split("Implementation-sensitive", 1)[1]
