"""Figures and magnitudes are never split across lines in a table, at any terminal width:
`n/a` is not folded at its slash, "crossover at 2K" is not wrapped at its spaces."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
from rich.console import Console
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.cli.tables import IdTable

runner = CliRunner()
KB = ["--kb", "bundled"]
WIDTHS = [40, 60, 80, 100, 120, 160, 200]


def run(*args: str, width: int) -> str:
    result = runner.invoke(app, [*KB, *args], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _shown_whole(cells: list[str], text: str) -> list[str]:
    """The cells of `cells` that `text` does not hold on one line as often as they occur."""
    wanted = Counter(cells)
    return [cell for cell, n in wanted.items() if text.count(cell) < n]


@pytest.mark.parametrize("width", WIDTHS)
def test_claims_never_split_a_magnitude(width: int) -> None:
    rows = json.loads(run("claims", "-f", "json", width=width))
    magnitudes = [r["magnitude"] for r in rows]
    assert "crossover at 2K" in magnitudes and "6x at 16K" in magnitudes
    assert _shown_whole(magnitudes, run("claims", width=width)) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_hw_show_never_splits_a_value(width: int) -> None:
    data = json.loads(run("hw", "show", "h200-sxm", "-f", "json", width=width))
    text = run("hw", "show", "h200-sxm", width=width)
    values = [
        "n/a" if v["value"] is None else f"{v['value']:g}"
        for part in ("specs", "computed")
        for v in data[part].values()
    ]
    assert "n/a" in values
    assert _shown_whole(values, text) == []
    assert not [ln for ln in text.splitlines() if ln.rstrip().endswith("n/")]


@pytest.mark.parametrize("width", WIDTHS)
def test_graph_why_never_splits_a_magnitude(width: int) -> None:
    data = json.loads(run("graph", "why", "mamba2-ssd", "--on", "h200-sxm", "-f", "json",
                          width=width))  # fmt: skip
    magnitudes = [c["magnitude"] for c in data["claims"]]
    assert _shown_whole(magnitudes, run("graph", "why", "mamba2-ssd", "--on", "h200-sxm",
                                        width=width)) == []  # fmt: skip


def test_a_plain_column_still_wraps_and_the_check_can_fail() -> None:
    table = IdTable()
    table.add_column("claim")
    table.add_column("magnitude", whole=True)
    table.add_column("note")
    table.add_row("a/b", "crossover at 2K", "n/a " + "words " * 12)
    console = Console(width=30, record=True, file=io.StringIO())
    console.print(table)
    text = console.export_text()
    assert "crossover at 2K" in text and _shown_whole(["crossover at 2K", "n/a"], text) == []
    # without `whole` the same magnitude wraps at this width: the check above is not vacuous
    plain = IdTable()
    for header in ("claim", "magnitude", "note"):
        plain.add_column(header)
    plain.add_row("a/b", "crossover at 2K", "n/a " + "words " * 12)
    console.print(plain)
    assert _shown_whole(["crossover at 2K"], console.export_text()) == ["crossover at 2K"]
