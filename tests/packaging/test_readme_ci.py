"""README's test command is exactly what CI runs: the second command of README's "First commands"
block, split at its `&&`, equals the lines of `.ci/run` between its `>>>` and `<<<` markers (pip
upgrade included: with Python 3.11's own pip one test fails, so a README that skipped it would
give a newcomer a red first run that CI never sees)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    """The two lines of README's first sh block (the setup + main job, the setup + tests)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## First commands", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def readme_test_steps() -> list[str]:
    return [step.strip() for step in readme_commands()[1].split(" && ")]


def ci_steps() -> list[str]:
    """The commands of .ci/run between its markers, one per line."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    found = re.search(r"^# >>>[^\n]*\n(.*?)^# <<<", text, re.MULTILINE | re.DOTALL)
    assert found, ".ci/run has no '# >>>' ... '# <<<' block"
    return [line.strip() for line in found.group(1).splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_readme_test_command_is_what_ci_runs() -> None:
    assert readme_test_steps() == ci_steps()


def test_the_shared_steps_upgrade_pip_then_install_then_run_pytest() -> None:
    steps = ci_steps()
    assert steps[0] == "python3 -m venv .venv"
    assert steps[1] == ".venv/bin/pip install -q --upgrade pip"
    assert any(s.startswith(".venv/bin/pip install") and "[kernels,dev]" in s for s in steps[2:])
    assert steps[-1] == ".venv/bin/python -m pytest"


def test_ci_runs_the_steps_under_set_e_so_a_failing_step_fails_ci() -> None:
    """Lines under `set -e` stop at the first failure, as the README's `&&` chain does; a step
    that swallowed its status (`|| true`, `set +e` before it) would make CI greener than README."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    head = text.split("# >>>", 1)[0]
    assert re.search(r"^set -euo pipefail$", head, re.MULTILINE)
    assert "set +e" not in text
    for step in ci_steps():
        assert "||" not in step and ";" not in step, step
        shlex.split(step)  # one plain command each


def test_the_first_command_sets_up_the_same_way_and_validates() -> None:
    first = [step.strip() for step in readme_commands()[0].split(" && ")]
    assert first[:2] == ci_steps()[:2]
    assert first[-1] == ".venv/bin/flopkb validate"


def test_ci_also_runs_ruff_over_the_whole_tree() -> None:
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    after = text.split("# <<<", 1)[1]
    lines = [line.strip() for line in after.splitlines() if line.strip() and line[0] != "#"]
    assert ".venv/bin/ruff check ." in lines
