"""The newcomer's help gaps of issue 27: `flopkb --help` lists `--format`, no usage line shows a
doubly bracketed argument (`[[DIR]]`), and `verify --claim` with a wrong id suggests the
closest ones, escaped."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.test_outputs import command_paths

runner = CliRunner()
BUNDLED = ["--kb", "bundled"]


def test_the_root_help_lists_format() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "-f, --format <text|json>" in result.stdout
    # and it does what the help says, before the command
    assert runner.invoke(app, ["--format", "json", *BUNDLED, "claims"]).stdout.startswith("[")


@pytest.mark.parametrize("path", command_paths(typer.main.get_command(app)), ids=" ".join)
def test_no_usage_line_doubles_its_brackets(path: tuple[str, ...]) -> None:
    usage = runner.invoke(app, [*path, "--help"]).stdout.splitlines()[0]
    assert "[[" not in usage and "]]" not in usage, usage


def test_init_usage_shows_dir_once_bracketed() -> None:
    usage = runner.invoke(app, ["init", "--help"]).stdout.splitlines()[0]
    assert usage == "Usage: flopkb init [OPTIONS] [DIR]"


@pytest.mark.parametrize(
    ("claim", "suggested"),
    [
        # the record exists, the row does not
        ("mamba2-ssd/ssd-vs-fused-scn", "did you mean mamba2-ssd/ssd-vs-fused-scan"),
        ("mamba2-ssd/zzzz", "record mamba2-ssd has the rows: ssd-vs-fused-scan"),
        # no such record
        ("mamba2-sd/ssd-vs-fused-scan", "did you mean mamba2-ssd/ssd-vs-fused-scan"),
    ],
)
def test_verify_claim_suggests_the_closest_ids(claim: str, suggested: str) -> None:
    result = runner.invoke(app, [*BUNDLED, "verify", "--claim", claim])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no claim {claim!r}" in lines[0]
    assert suggested in lines[0]


def test_verify_claim_suggestions_are_escaped() -> None:
    result = runner.invoke(app, [*BUNDLED, "verify", "--claim", "mamba2-ssd/ssd-vs-fused\x1b[2J"])
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\\x1b" in result.stderr
    assert "did you mean mamba2-ssd/ssd-vs-fused-scan" in result.stderr


def test_verify_record_suggests_the_closest_record() -> None:
    result = runner.invoke(app, [*BUNDLED, "verify", "--record", "mamba2-sd"])
    assert result.exit_code == 2 and "did you mean mamba2-ssd" in result.stderr
