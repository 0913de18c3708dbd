"""How long the CPU-side commands take here: the whole test suite and `flopkb verify`'s plan mode.

    python bench/cpu_times.py [--out bench/results/cpu_times.json]

Runs `python -m pytest -q` (the test suite, as CI runs it) and `python -m flopkb verify` (CPU
checks of every experiment's kernels through the Triton interpreter, and the plan), times each
(wall clock), and writes the figures docs/performance.md and docs/verify.md quote, with the
machine.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, ROOT, parser, write_json


def timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU seconds (the command and its children) of `cmd`, and its result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def main() -> None:
    args = parser(__doc__, out=RESULTS / "cpu_times.json").parse_args()
    load_before = os.getloadavg()
    suite_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    suite_s, suite_cpu, suite = timed(suite_cmd)
    passed = re.search(r"(\d+) passed", suite.stdout)
    if suite.returncode != 0 or passed is None:
        raise SystemExit(f"the suite failed (exit {suite.returncode}):\n{suite.stdout[-3000:]}")
    plan_s, plan_cpu, plan = timed([sys.executable, "-m", "flopkb", "verify", "--format", "json"])
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
        # the machine may be shared: wall time moves with the load, CPU time much less
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "suite_s": round(suite_s, 1),
        "suite_cpu_s": round(suite_cpu, 1),
        "suite_passed": int(passed.group(1)),
        "suite_summary": suite.stdout.strip().splitlines()[-1],
        "plan_command": "python -m flopkb verify --format json",
        "plan_s": round(plan_s, 1),
        "plan_cpu_s": round(plan_cpu, 1),
    }
    write_json(args.out, result, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
