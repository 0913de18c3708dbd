"""Write the generated pages and blocks of docs/ from the evidence, the KB and the results files
that bench/results/MANIFEST.yaml names.

    python -m tools.docs           # rewrite every generated page and block
    python -m tools.docs --check   # compare only: exit 1, with a diff, where a page differs

After a new GPU run: commit the new evidence and results files, point the manifest at them, then
run this. A figure the sources no longer hold (a sweep point gone) stops it with a message naming
the claim and the point. tests/docs/test_generated_pages.py fails while a page differs.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from .pages import MARKED, WHOLE, generated
from .sources import ROOT, Sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = parser.parse_args(argv)
    src, status = Sources(), 0
    for name in (*MARKED, *WHOLE):
        path = ROOT / name
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        new = generated(name, text, src)
        if new == text:
            continue
        if args.check:
            status = 1
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(True), new.splitlines(True), name, f"{name} (generated)"))
        else:
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(path)
            print(f"rewrote {name}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
