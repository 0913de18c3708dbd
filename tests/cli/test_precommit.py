"""pre-commit on a user's KB repository: a deletion that breaks a reference fails the hooks.

`test_pre_commit_itself` runs the real pre-commit (a dev dependency; skipped when it is not
installed) with local hooks that copy `.pre-commit-hooks.yaml` (entry, files, pass_filenames,
always_run), only swapping the `flopkb` executable for this interpreter and language `python`
for `system` (pre-commit would otherwise build an environment from the network). The other
tests call the hooks' entry commands as pre-commit calls them: the changed files as arguments,
no arguments at all when only a deletion is staged.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flopkb.cli import app
from tests.cli.kbrepo import git, make_repo

ROOT = Path(__file__).resolve().parents[2]
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
runner = CliRunner()
CITED = "records/sources/dao-gu-2024-ssd.yaml"  # cited by records/classes/mamba2-ssd.yaml


def hook(hook_id: str) -> dict:
    return next(h for h in HOOKS if h["id"] == hook_id)


def test_both_hooks_run_on_every_commit() -> None:
    # pre-commit skips a hook whose files match nothing: a commit that only deletes would pass
    assert all(h["always_run"] for h in HOOKS)
    assert hook("flopkb-validate-all")["pass_filenames"] is False
    assert hook("flopkb-validate")["entry"] == "flopkb validate --changed --"


def entry_args(hook_id: str, files: list[str], options: tuple[str, ...] = ()) -> list[str]:
    """The hook's command line; `options` go before the entry's `--` (which ends its options)."""
    h = hook(hook_id)
    args = h["entry"].split()[1:]
    at = args.index("--") if "--" in args else len(args)
    args[at:at] = options
    return args + (files if h["pass_filenames"] else [])


@pytest.mark.parametrize("hook_id", ["flopkb-validate", "flopkb-validate-all"])
def test_deleting_a_cited_source_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook_id: str
) -> None:
    repo = make_repo(tmp_path)
    git(repo, "rm", "-q", CITED)
    monkeypatch.chdir(repo)
    # pre-commit passes only files that exist: none here
    result = runner.invoke(app, entry_args(hook_id, [], ("-f", "json")))
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {(e["file"], e["rule"]) for e in data["errors"]} == {
        ("records/classes/mamba2-ssd.yaml", "FKB301")
    }


def test_changed_file_reports_the_records_that_reference_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    quantity = repo / "records/quantities/hbm_bandwidth.yaml"
    # the id changes inside the file: every record naming hbm_bandwidth breaks
    quantity.write_text(quantity.read_text().replace("id: hbm_bandwidth", "id: hbm_bw"))
    git(repo, "add", "-A")
    monkeypatch.chdir(repo)
    changed = ["records/quantities/hbm_bandwidth.yaml"]
    without = json.loads(runner.invoke(app, ["validate", *changed, "-f", "json"]).stdout)
    with_refs = json.loads(
        runner.invoke(app, entry_args("flopkb-validate", changed, ("-f", "json"))).stdout
    )
    files = {e["file"] for e in with_refs["errors"]}
    # the accelerator specifies it, the computed ridge point divides by it
    assert "records/accelerators/h100-sxm.yaml" in files
    assert files - {e["file"] for e in without["errors"]}
    assert with_refs["records"] > without["records"]


def test_a_clean_commit_passes_and_reports_on_the_changed_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path)
    monkeypatch.chdir(repo)
    result = runner.invoke(app, entry_args("flopkb-validate", [CITED], ("-f", "json")))
    assert result.exit_code == 0, result.stdout


@pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None, reason="needs pre-commit")
def _run_pre_commit(repo: Path, env: dict[str, str], timeout: int
                    ) -> subprocess.CompletedProcess[str]:
    """`pre-commit run` in `repo` under `env`, its output captured."""
    return subprocess.run([sys.executable, "-m", "pre_commit", "run"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_pre_commit_itself(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    local = []
    for h in HOOKS:
        entry = h["entry"].replace("flopkb", f"{sys.executable} -m flopkb", 1)
        keys = ("id", "name", "files", "pass_filenames", "always_run", "require_serial")
        local.append({**{k: h[k] for k in keys if k in h}, "entry": entry, "language": "system"})
    config = {"repos": [{"repo": "local", "hooks": local}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hooks")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
    }

    def pre_commit() -> subprocess.CompletedProcess[str]:
        return _run_pre_commit(repo, env, timeout=300)

    git(repo, "rm", "-q", CITED)
    done = pre_commit()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Skipped" not in done.stdout
    assert done.stdout.count("Failed") == 2
    assert done.stdout.count("records/classes/mamba2-ssd.yaml") >= 2
    assert "FKB301" in done.stdout
    git(repo, "reset", "-q", "--hard")
    done = pre_commit()
    assert done.returncode == 0, done.stdout + done.stderr


README = ROOT / "README.md"
URL, SHA = "<flopkb-git-url>", "<commit-sha>"


def readme_pre_commit_block() -> str:
    """The YAML block under README's `<!-- pre-commit-config -->` marker, as a user copies it."""
    text = README.read_text(encoding="utf-8")
    after = text.split("<!-- pre-commit-config -->\n", 1)[1]
    assert after.startswith("```yaml\n")
    return after.removeprefix("```yaml\n").split("```", 1)[0]


def test_readme_recommends_one_hook_with_placeholders_to_fill() -> None:
    block = readme_pre_commit_block()
    config = yaml.safe_load(block)
    [repo] = config["repos"]
    assert (repo["repo"], repo["rev"]) == (URL, SHA)
    # one hook, so that each finding prints once
    assert [h["id"] for h in repo["hooks"]] == ["flopkb-validate"]
    assert {h["id"] for h in HOOKS} >= {"flopkb-validate", "flopkb-validate-all"}


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None, reason="needs pre-commit")
def test_readme_pre_commit_block_works_as_written(tmp_path: Path) -> None:
    """README's block, verbatim but for the two placeholders: a local clone of this repository
    and its HEAD. Offline: pip may use no index; the hook environment's dependencies come from
    this interpreter's site-packages (PYTHONPATH), flopkb itself is built from the clone."""
    if not (ROOT / ".git").exists():
        pytest.skip("needs flopkb as a git checkout (to clone it)")
    clone = tmp_path / "flopkb-clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})  # fmt: skip
    sha = git(clone, "rev-parse", "HEAD").strip()
    block = readme_pre_commit_block()
    assert block.count(URL) == 1 and block.count(SHA) == 1
    repo = make_repo(tmp_path)
    (repo / ".pre-commit-config.yaml").write_text(
        block.replace(URL, str(clone)).replace(SHA, sha), encoding="utf-8"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hooks")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "PIP_NO_INDEX": "1",
        # pip reads "0" as: do not isolate the build (hatchling comes from site-packages too)
        "PIP_NO_BUILD_ISOLATION": "0",
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
    }

    def pre_commit() -> subprocess.CompletedProcess[str]:
        return _run_pre_commit(repo, env, timeout=540)

    git(repo, "rm", "-q", CITED)
    done = pre_commit()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Skipped" not in done.stdout and done.stdout.count("Failed") == 1
    findings = [ln for ln in done.stdout.splitlines() if ": error: FKB" in ln]
    # each finding once: one hook, one run
    assert findings and len(findings) == len(set(findings))
    assert all("FKB301" in ln and "dao-gu-2024-ssd" in ln for ln in findings)
    git(repo, "reset", "-q", "--hard")
    done = pre_commit()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout
