"""Every text summary ends by naming the KB it read, as README promises; counts say "1 claim",
never "1 claims"; an empty table is a sentence; `load_kb` takes a str as well as a Path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from tests.cli.kbrepo import make_repo

runner = CliRunner()

TEXT_COMMANDS = [
    ["validate"],
    ["claims"],
    ["hw", "show", "h100-sxm"],
    ["hw", "compare", "h100-sxm", "h200-sxm"],
    ["extract", "selective-ssm-scan"],
    ["graph", "affects", "hbm_bandwidth"],
    ["graph", "why", "mamba2-ssd", "--on", "h200-sxm"],
    ["graph", "diff", "h100-sxm", "h200-sxm"],
    ["graph", "what-if", "h100-sxm", "--set", "hbm_bandwidth=4.8"],
    ["graph", "path", "mamba2-ssd", "hbm_bandwidth"],
    ["graph", "path", "dao-gu-2024-ssd", "nvidia-h200-datasheet"],
    ["graph", "status"],
]


@pytest.mark.parametrize("command", TEXT_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_text_summary_ends_with_the_kb_line(command: list[str]) -> None:
    result = runner.invoke(app, ["--kb", "bundled", *command])
    assert result.exit_code == 0, result.output
    last = result.stdout.splitlines()[-1]
    expected = f"KB {bundled_root()} (bundled KB, --kb bundled)"
    if command[0] == "extract":  # YAML to paste: its KB line is a comment
        assert last == f"# {expected}"
    elif command[0] == "validate":  # one summary line, the KB and the config at its end
        assert last.startswith("ok: ") and last.endswith(f"; {expected}; no config")
    else:
        assert last == expected


def test_graph_render_names_the_kb_too(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "kb.svg"
    result = runner.invoke(
        app, ["--kb", "bundled", "graph", "render", str(out), "--focus", "hbm_bandwidth",
              "--engine", "matplotlib"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"KB {bundled_root()} (bundled KB, --kb bundled)"


def test_the_kb_line_says_how_a_found_kb_was_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    monkeypatch.chdir(repo / "records")
    result = runner.invoke(app, ["graph", "why", "mamba2-ssd"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"KB {repo} (found from the current folder upward)"


def test_one_of_a_thing_is_singular() -> None:
    result = runner.invoke(app, ["--kb", "bundled", "claims", "--record", "jamba"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].strip() == "1 claim"
    path = runner.invoke(
        app, ["--kb", "bundled", "graph", "path", "mamba2-ssd", "mamba2-ssd/ssd-vs-fused-scan"]
    )
    assert path.exit_code == 0, path.output
    assert "(1 edge)" in path.stdout.splitlines()


def test_no_computed_parameters_is_a_sentence_not_an_empty_table(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, with_git=False)
    (repo / "records/quantities/ridge_point_bf16.yaml").unlink()
    result = runner.invoke(app, ["--kb", str(repo), "hw", "show", "h100-sxm"])
    assert result.exit_code == 0, result.output
    assert "h100-sxm: no computed parameters" in result.stdout
    assert "computed parameters\n" not in result.stdout


def test_load_kb_accepts_a_str(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(make_repo(tmp_path, with_git=False), tmp_path / "kb")
    monkeypatch.chdir(tmp_path / "kb")
    kb, findings = load_kb(".")
    as_path, _ = load_kb(Path("."))
    assert sorted(kb.records) == sorted(as_path.records) and "mamba2-ssd" in kb.records
    assert [f for f in findings if f.severity.value == "error"] == []
