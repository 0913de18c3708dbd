"""A KB folder holding Python packages of its own never gets them imported by flopkb's entry
points (issue 27): `python -m flopkb` drops the working folder from `sys.path` before it imports
anything else, and the forms the docs give against a shadow `flopkb/` itself (the `flopkb`
script, `python -P -m flopkb`, `torchrun --no-python flopkb`) never import it either. Each shadow
package writes a marker file when imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHADOWED = ("flopkb", "typer", "yaml", "rich", "click", "pydantic")
# what pip writes for `[project.scripts] flopkb = "flopkb.cli:main"`
CONSOLE_SCRIPT = """#!{python}
import re
import sys
from flopkb.cli import main
if __name__ == "__main__":
    sys.argv[0] = re.sub(r"(-script\\.pyw|\\.exe)?$", "", sys.argv[0])
    sys.exit(main())
"""


def shadow_kb(tmp_path: Path, names: tuple[str, ...]) -> tuple[Path, Path]:
    """A KB folder whose packages `names` each write `<marker>/<name>` when imported."""
    kb = tmp_path / "kb"
    marker = tmp_path / "marker"
    marker.mkdir()
    shutil.copytree(ROOT / "tests/cases/valid/small-kb/records", kb / "records")
    for name in names:
        (kb / name).mkdir()
        (kb / name / "__init__.py").write_text(
            f"open({str(marker / name)!r}, 'w').close()\nraise SystemExit(97)\n"
        )
        (kb / name / "__main__.py").write_text("")
    return kb, marker


def run(command: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    full_env.update({"PYTHONPATH": str(ROOT), "NO_COLOR": "1", **env})
    return subprocess.run(
        command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300
    )


def test_python_m_flopkb_never_imports_the_working_folders_packages(tmp_path: Path) -> None:
    kb, marker = shadow_kb(tmp_path, SHADOWED[1:])
    done = run([sys.executable, "-m", "flopkb", "validate", "--format", "json"], kb)
    assert sorted(p.name for p in marker.iterdir()) == []
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P is Python 3.11's")
def test_python_safe_path_never_imports_a_shadow_flopkb(tmp_path: Path) -> None:
    kb, marker = shadow_kb(tmp_path, SHADOWED)
    for command, env in (
        ([sys.executable, "-P", "-m", "flopkb", "--version"], {}),
        ([sys.executable, "-m", "flopkb", "--version"], {"PYTHONSAFEPATH": "1"}),
    ):
        done = run(command, kb, **env)
        assert sorted(p.name for p in marker.iterdir()) == []
        assert done.returncode == 0, done.stderr


def console_script(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "flopkb"
    script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
    script.chmod(0o755)
    return bin_dir


def test_the_flopkb_script_never_imports_a_shadow_flopkb(tmp_path: Path) -> None:
    kb, marker = shadow_kb(tmp_path, SHADOWED)
    bin_dir = console_script(tmp_path)
    done = run([str(bin_dir / "flopkb"), "validate"], kb)
    assert sorted(p.name for p in marker.iterdir()) == []
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("torchrun") is None and not (
    Path(sys.executable).parent / "torchrun").exists(), reason="torchrun is torch's")
def test_torchrun_no_python_never_imports_a_shadow_flopkb(tmp_path: Path) -> None:
    kb, marker = shadow_kb(tmp_path, SHADOWED)
    bin_dir = console_script(tmp_path)
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).parent / "torchrun")
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    done = run(
        [torchrun, "--nproc-per-node", "1", "--standalone", "--no-python", "flopkb", "--version"],
        kb, PATH=path,
    )  # fmt: skip
    assert sorted(p.name for p in marker.iterdir()) == []
    assert done.returncode == 0, done.stderr
