"""Every file README and docs/*.md point to exists: relative links and images (and the heading a
`#anchor` names), and repository paths written in backticks (`bench/cpu_times.py`,
`kernels/<op>/`, `records/evidence/<id>.yaml` as a pattern; a path of the worked example KB under
docs/examples/ counts). No document, and no comment of the
tools, benchmarks or tests, cites a design document the repository does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             ROOT / "bench" / "README.md", ROOT / "tools" / "README.md",
             ROOT / "bench" / "results" / "history" / "README.md"]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# backticked text that starts with one of these folders is a path of this repository
TOP = ("bench/", "tools/", "docs/", "tests/", "flopkb/", "kernels/", "records/", "experiments/",
       "schema/", ".ci/")
# where a page speaks of a KB's own files (`kernels/rmsnorm/fused.py` of the worked example)
EXAMPLE_KBS = sorted((ROOT / "docs" / "examples").glob("*/"))
# names of files that live outside the repository (the project's own notes)
ABSENT = ("DES" + "IGN", "CLAIMS" + ".md", "STYLE" + ".md")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as `-`."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


@pytest.mark.parametrize("document", DOCUMENTS, ids=_ids(DOCUMENTS))
def test_every_relative_link_resolves(document: Path) -> None:
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        path = (document.parent / name).resolve() if name else document
        if not path.exists() or (
                anchor and path.suffix == ".md" and anchor not in anchors(path)):
            broken.append(target)
    assert broken == []


def _pattern(token: str) -> str | None:
    """The path a backticked token names, as a glob (None: not a repository path)."""
    token = token.strip().rstrip(".,;:)")
    if not token.startswith(TOP) or " " in token:
        return None
    token = re.split(r"::|:(?=[A-Za-z_])", token)[0]
    token = re.sub(r"<[^>]*>|\{[^}]*\}", "*", token)
    return token.replace("...", "*")


@pytest.mark.parametrize("document", DOCUMENTS, ids=_ids(DOCUMENTS))
def test_every_repository_path_named_in_backticks_exists(document: Path) -> None:
    text = FENCE.sub("", document.read_text(encoding="utf-8"))
    missing = []
    for token in CODE.findall(text):
        pattern = _pattern(token)
        if pattern is None:
            continue
        if not any(any(base.glob(pattern.rstrip("/"))) for base in (ROOT, *EXAMPLE_KBS)):
            missing.append(token)
    assert missing == []


def test_the_path_reading_sees_paths() -> None:
    assert _pattern("kernels/<op>/") == "kernels/*/"
    assert _pattern("flopkb/verify/timing.py::time_cuda") == "flopkb/verify/timing.py"
    assert _pattern("rmsnorm.fused:rmsnorm") is None
    assert _pattern("tests/cases/{valid,invalid}/") == "tests/cases/*/"


def test_slugs_follow_github() -> None:
    assert slug("`flopkb validate` at 10,000 records") == "flopkb-validate-at-10000-records"
    assert slug("Writing files: one rule for every command that writes") == (
        "writing-files-one-rule-for-every-command-that-writes")


@pytest.mark.parametrize("folder", ["docs", "bench", "tools", "tests"])
def test_no_reference_to_design_documents_that_are_not_here(folder: str) -> None:
    files = [ROOT / "README.md"] if folder == "docs" else []
    files += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".md", ".py", ".sh"}]
    cited = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        cited += [f"{path.relative_to(ROOT)}: {name}" for name in ABSENT
                  if re.search(rf"\b{re.escape(name)}\b", text) and not (ROOT / name).exists()]
    assert cited == []
