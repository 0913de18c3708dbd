"""Collect bench/suite_beside_hog.sh runs into bench/results/suite_beside_hog.json.

    python bench/suite_beside_hog.py DIR [DIR ...] [--out bench/results/suite_beside_hog.json]
                                     [--append]

Each DIR is one attempt (three runs of .ci/run at one commit beside a CPU hog): its summary.txt
gives the commit, each run's exit status, wall time and pytest's last line; its logs give the
names of the tests that failed. The machine is this one (where the runs were made). --append keeps
the attempts already in the output (the folders of earlier attempts may be gone with their machine),
each with the machine it ran on.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, parser, write_json

RUN = re.compile(r"run (\d+) rc (\d+) wall (\d+) s: =* (.*?) =*$")


def attempt(folder: Path) -> dict:
    lines = (folder / "summary.txt").read_text(encoding="utf-8").splitlines()
    head = re.search(r"rev (\w+) start (\S+)", lines[0])
    runs = []
    for line in lines[1:]:
        m = RUN.match(line)
        if not m:
            continue
        log = (folder / f"log{m.group(1)}.txt").read_text(encoding="utf-8", errors="replace")
        failed = sorted(set(re.findall(r"^FAILED (\S+)", log, re.M)))
        runs.append({"run": int(m.group(1)), "rc": int(m.group(2)),
                     "wall_s": int(m.group(3)), "pytest": m.group(4), "failed": failed})
    return {"commit": head.group(1), "started": head.group(2), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, out=RESULTS / "suite_beside_hog.json")
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--note", action="append", default=[],
                    help="DIR=TEXT: what else ran beside that attempt (repeatable)")
    ap.add_argument("--append", action="store_true",
                    help="keep the attempts already in --out and add these after them")
    args = ap.parse_args(argv)
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
                 platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    data = {"machine": {"cpus": os.cpu_count(), "cpu": model, "python": sys.version.split()[0],
                        "platform": platform.platform()},
            "command": "bash bench/suite_beside_hog.sh DIR (one `python3 -c 'while True: pass'` "
                       "beside three runs of .ci/run)",
            "attempts": [attempt(d) for d in args.dirs]}
    notes = dict(n.split("=", 1) for n in args.note)
    for folder, entry in zip(args.dirs, data["attempts"], strict=True):
        entry["machine"] = data["machine"]
        if str(folder) in notes:
            entry["note"] = notes[str(folder)]
    if args.append and args.out.is_file():
        old = json.loads(args.out.read_text(encoding="utf-8"))
        new = {(a["commit"], a["started"]) for a in data["attempts"]}
        kept = [{**a, "machine": a.get("machine", old.get("machine"))}
                for a in old.get("attempts", []) if (a["commit"], a["started"]) not in new]
        data["attempts"] = kept + data["attempts"]
    write_json(args.out, data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
