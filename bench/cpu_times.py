"""How long the CPU-side commands take here: the whole test suite and `flopkb verify`'s plan mode.

    python bench/cpu_times.py [--out bench/results/cpu_times.json]

Runs `python -m pytest -q` (the README's test command, as CI runs it) and `python -m flopkb verify`
(CPU checks of every experiment's kernels through the Triton interpreter, and the plan), times
each (wall clock), and writes the figures README and docs/verify.md quote, with the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.monotonic() - start, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "cpu_times.json")
    args = parser.parse_args()
    suite_s, suite = timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    passed = re.search(r"(\d+) passed", suite.stdout)
    if suite.returncode != 0 or passed is None:
        raise SystemExit(f"the suite failed (exit {suite.returncode}):\n{suite.stdout[-3000:]}")
    plan_s, plan = timed([sys.executable, "-m", "flopkb", "verify", "--format", "json"])
    if plan.returncode != 0:
        raise SystemExit(f"flopkb verify failed (exit {plan.returncode}):\n{plan.stderr[-3000:]}")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    result = {
        "date": dt.date.today().isoformat(),
        "machine": {
            "cpus": cpus,
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "suite_command": "python -m pytest -q",
        "suite_s": round(suite_s, 1),
        "suite_passed": int(passed.group(1)),
        "suite_summary": suite.stdout.strip().splitlines()[-1],
        "plan_command": "python -m flopkb verify --format json",
        "plan_s": round(plan_s, 1),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
