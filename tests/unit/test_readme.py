"""README's tables are generated: the rule table from the rule registry, every H200 figure (verdict
table, kernel table, ceilings, run times) by bench/docs_figures.py from the evidence and the bench
results, so a figure cannot drift from the file it comes from."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import flopkb.check  # noqa: F401 - registers every rule
from flopkb.check.base import RULES
from flopkb.report import rules_markdown

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _figures() -> Any:
    path = ROOT / "bench" / "docs_figures.py"
    spec = importlib.util.spec_from_file_location("docs_figures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_readme_rule_table_is_the_generated_one() -> None:
    text = README.read_text(encoding="utf-8")
    assert rules_markdown().strip() in text
    assert all(f"| {code} |" in text for code in RULES)


@pytest.mark.parametrize(
    ("document", "blocks"),
    [
        ("README.md", {"cpu-times", "verify-run", "verdicts", "kernels", "validate-speed",
                       "graph-speed", "kernel-notes"}),
        ("docs/verify.md", {"calibration", "verify-run-docs", "verdicts", "plan-time"}),
        ("docs/validate.md", {"validate-table"}),
        ("README.md", {"kb-summary"}),
        ("docs/kb.md", {"kb-counts"}),
        ("docs/graph.md", {"graph-status"}),
    ],
)
def test_figure_blocks_equal_what_the_generator_writes(document: str, blocks: set[str]) -> None:
    figures = _figures()
    text = (ROOT / document).read_text(encoding="utf-8")
    assert blocks <= set(figures.blocks_in(text))
    generated = figures.regenerate(text, figures.Sources())
    # on failure: python bench/docs_figures.py (and commit the result)
    assert generated == text


def test_no_h200_figure_outside_a_generated_block() -> None:
    figures = _figures()
    text = README.read_text(encoding="utf-8")
    outside = figures.BLOCK.sub("", text)
    for claim in figures.CLAIMS:
        assert f"| `{claim}` (" not in outside, claim
    assert "TFLOP/s median" not in outside
    assert not re.search(r"^\| (SSD chunked|Triton bf16 GEMM|INT8 GEMM)", outside, re.MULTILINE)


def test_the_blocks_follow_their_sources(tmp_path: Path) -> None:
    # a copy of the sources with one measured figure and one benchmark figure changed
    # (the model blocks read the whole KB: classes, quantities, sources and architectures too)
    for folder in ("records", "bench/results"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
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
    figures = _figures()
    text = README.read_text(encoding="utf-8")
    changed = figures.regenerate(text, figures.Sources(root=tmp_path))
    shown = f"| 5.12x {figures.band(measured['low'], measured['high'])} |"
    assert shown in changed and "| 1234 TOPS |" in changed
    assert changed != text


def test_implementation_sensitive_claims_are_named_under_the_verdict_table(tmp_path: Path) -> None:
    figures = _figures()
    src = figures.Sources()
    # the pooled flag (flopkb.evidence.pooled): what `flopkb claims` shows
    sensitive = {c for c in figures.CLAIMS
                 if c in src.pooled and src.pooled[c].implementation_sensitive}
    assert sensitive  # the committed runs have some; the sentence must name exactly those
    block = figures.block_verdicts(src)
    sentence = block.split("Implementation-sensitive", 1)[1].replace("\n", " ")
    assert {c for c in figures.CLAIMS if f"`{c}`" in sentence} == sensitive
    for claim in sensitive:
        row = next(line for line in block.splitlines() if line.startswith(f"| `{claim}` ("))
        assert "**implementation-sensitive**" in row
    # flipping the flag in a copy of the evidence takes the claim out of the sentence
    # (the model blocks read the whole KB: classes, quantities, sources and architectures too)
    for folder in ("records", "bench/results"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    claim = sorted(sensitive)[0]
    stem = "ev-" + claim.replace("/", "--") + "-h200-sxm-"
    ev = next(p for p in sorted((tmp_path / "records/evidence").glob(stem + "*.yaml"))
              if "implementation_sensitive: true" in p.read_text(encoding="utf-8"))
    ev.write_text(ev.read_text().replace("implementation_sensitive: true",
                                         "implementation_sensitive: false"), encoding="utf-8")
    changed = figures.block_verdicts(figures.Sources(root=tmp_path))
    assert f"`{claim}`" not in changed.split("Implementation-sensitive", 1)[1]
