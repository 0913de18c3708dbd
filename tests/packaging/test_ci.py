"""CI (.ci/run) runs the README's test command verbatim, and `ruff check .` before it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command_and_ruff() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    (command,) = [line for line in readme if line.rstrip().endswith(".venv/bin/python -m pytest")]
    steps = [part.strip() for part in command.split("&&")]
    script = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    # every step of the README's command is a line of the script, in the README's order
    at = [script.index(step) for step in steps if step != "python3 -m venv .venv"]
    assert at == sorted(at) and len(at) == len(steps) - 1
    assert "python3 -m venv .venv" in script
    ruff = script.index(".venv/bin/ruff check .")
    assert at[0] < ruff < at[-1]
