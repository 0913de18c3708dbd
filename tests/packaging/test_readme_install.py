"""README's install lines work as written: `pip install '... @ git+<flopkb-git-url>'` against a
local clone of this repository, offline (pip may use no index: the dependencies come from this
interpreter's site-packages through PYTHONPATH; flopkb itself is built from the clone)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL = "<flopkb-git-url>"


def readme_git_installs() -> list[list[str]]:
    """The `pip install ... git+<flopkb-git-url>` lines of README's install block, as argv."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Install", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln) for ln in lines if ln.startswith("pip install") and f"git+{URL}" in ln]


def test_readme_installs_from_a_git_url_and_names_no_index() -> None:
    installs = readme_git_installs()
    assert [argv[-1] for argv in installs] == [
        f"flopkb @ git+{URL}",
        f"flopkb[kernels] @ git+{URL}",
    ]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # an install from an index (`pip install flopkb`, `pip install 'flopkb[kernels]'`) is nowhere
    assert re.findall(r"pip install '?flopkb(?:\[[a-z,]+\])?'?(?= |`|$)(?! @)", text, re.M) == []


@pytest.mark.slow
def test_readme_git_install_works_offline(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("needs flopkb as a git checkout (to clone it)")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, env=env, timeout=120)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env |= {
        "PIP_NO_INDEX": "1",
        # pip reads "0" as: do not isolate the build (hatchling comes from site-packages too)
        "PIP_NO_BUILD_ISOLATION": "0",
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
    }
    for argv in readme_git_installs():
        argv = [str(venv / "bin" / "pip"), *argv[1:-1], argv[-1].replace(URL, clone.as_uri())]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=540)
        assert done.returncode == 0, done.stdout + done.stderr
    site = (
        venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )
    assert (site / "flopkb" / "_kb" / "records").is_dir()
    done = subprocess.run([str(venv / "bin" / "flopkb"), "validate", "--kb", "bundled"], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    # the summary names the KB validated (and then the config it read, here none)
    summary = done.stdout.splitlines()[-1]
    assert f"KB {site / 'flopkb' / '_kb'} (bundled KB, --kb bundled);" in summary
