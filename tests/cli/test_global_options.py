"""The root's options (`--kb`, `--color`, `--debug`, `--version`) are accepted after the command
as well as before it, and never taken from a command's own arguments after `--`."""

from __future__ import annotations

import json

import click
import pytest
import typer
from typer.testing import CliRunner

from flopkb.cli import app
from flopkb.cli.argv import GLOBAL_FLAGS, GLOBAL_WITH_VALUE, hoist_global_options
from flopkb.paths import bundled_root

runner = CliRunner()


def _commands(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def test_no_command_declares_an_option_named_like_a_global_one() -> None:
    root = typer.main.get_command(app)
    globals_ = set(GLOBAL_WITH_VALUE) | set(GLOBAL_FLAGS)
    declared_at_root = {opt for p in root.params for opt in p.opts}
    assert globals_ <= declared_at_root
    for path, command in _commands(root):
        if not path:
            continue
        clash = {opt for p in command.params for opt in p.opts} & globals_
        assert not clash, f"flopkb {' '.join(path)} declares {clash}"


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["validate", "--kb", "bundled"], ["--kb", "bundled", "validate"]),
        (["hw", "show", "x", "--kb=k", "--debug"], ["--kb=k", "--debug", "hw", "show", "x"]),
        (["--kb", "a", "claims", "--color", "never"], ["--kb", "a", "--color", "never", "claims"]),
        (["validate", "--", "--kb"], ["validate", "--", "--kb"]),
        (["validate", "--strict"], ["validate", "--strict"]),
        # a command's own --format, given before the command: moved after it
        (["--format", "json", "claims"], ["claims", "--format", "json"]),
        (["-fjson", "--kb", "k", "hw", "show", "x"], ["--kb", "k", "hw", "show", "x", "-fjson"]),
        (
            ["--format=json", "graph", "why", "c", "--", "x"],
            ["graph", "why", "c", "--format=json", "--", "x"],
        ),
        # after the command it is the command's already: left alone
        (["graph", "export", "--format", "dot"], ["graph", "export", "--format", "dot"]),
    ],
)
def test_hoisting(argv: list[str], expected: list[str]) -> None:
    assert hoist_global_options(argv) == expected


def test_kb_after_the_command_is_the_same_as_before() -> None:
    before = runner.invoke(app, ["--kb", "bundled", "validate", "-f", "json"])
    after = runner.invoke(app, ["validate", "-f", "json", "--kb", "bundled"])
    assert after.exit_code == before.exit_code == 0
    assert json.loads(after.stdout)["kb"] == {
        "root": str(bundled_root()), "bundled": True, "config": None, "isolated": False
    }
    assert json.loads(after.stdout) == json.loads(before.stdout)


def test_every_global_option_after_a_nested_command() -> None:
    result = runner.invoke(
        app, ["hw", "show", "h100-sxm", "--kb", "bundled", "--color", "never", "--debug"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].endswith("(bundled KB, --kb bundled)")
    assert "\x1b[" not in result.stdout


def test_format_before_the_command_is_the_commands_format() -> None:
    before = runner.invoke(
        app, ["--format", "json", "--kb", "bundled", "claims", "--record", "jamba"]
    )
    after = runner.invoke(
        app, ["--kb", "bundled", "claims", "--record", "jamba", "--format", "json"]
    )
    assert before.exit_code == after.exit_code == 0, before.output
    assert json.loads(before.stdout) == json.loads(after.stdout)


def test_a_bad_global_value_after_the_command_is_one_usage_line() -> None:
    result = runner.invoke(app, ["validate", "--color", "sometimes"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--color" in result.stderr
