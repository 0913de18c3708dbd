"""A user's own KB repository in a temporary folder: records (the small valid case), git; or the
worked example KB of docs/verify-your-own-claim.md (its own experiment, kernel and claim)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "cases"
SMALL = CASES / "valid" / "small-kb"
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "rmsnorm-kb"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def commit_all(repo: Path) -> Path:
    """`repo` made a git repository (branch main) with everything in it committed."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "KB")
    return repo


def make_repo(tmp_path: Path, with_git: bool = True) -> Path:
    """`<tmp>/repo` holding `records/` of the small valid KB, committed when `with_git`."""
    repo = tmp_path / "repo"
    shutil.copytree(SMALL / "records", repo / "records")
    return commit_all(repo) if with_git else repo


def copy_example(dest: Path) -> Path:
    """The worked example KB copied to `dest` (bytecode left behind), returned."""
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def break_effect(repo: Path) -> Path:
    """Make one claim's effect non-verbatim (FKB201) and return the file."""
    path = repo / "records/classes/mamba2-ssd.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace(
            'effect: "2-8x faster than Mamba\'s fused associative scan"',
            'effect: "2-8x quicker than the fused scan"',
        ),
        encoding="utf-8",
    )
    return path
