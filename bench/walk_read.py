"""What the symlink-safe walk and the guarded reader cost on a 10,000-record KB, and `--kb /`.

Builds the KB with the clone generator of bench/validate_scale.py, then times, median of
`--repeat` runs, files warm in the page cache:

  (a) listing: `flopkb.load.walk.walk_records` beside the `os.walk` + suffix filter + `Path` list it
      replaced (the old `record_files`);
  (b) reading every file found: `flopkb.load.safefile.read_regular` (lstat, open with O_NOFOLLOW
      and O_NONBLOCK, fstat, reads sized by the file) beside the `open(path, "rb").read(limit)`
      it replaced (a buffered read of 1 MiB + 1 allocates that much for every small file);
  (c) `walk_records(Path("/"))`: the bounded walk of a whole filesystem (stops at its bound).

Writes bench/results/walk_read.json with the figures, the machine and the command.

    python bench/walk_read.py [--records 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "walk_read.json"
sys.path.insert(0, str(REPO))

from flopkb.load.safefile import read_regular  # noqa: E402
from flopkb.load.walk import RECORD_SUFFIXES, walk_records  # noqa: E402


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "validate_scale", REPO / "bench" / "validate_scale.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _median(fn: Callable[[], Any], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _os_walk(base: str) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(folder, n) for n in names if n.endswith(RECORD_SUFFIXES)]
    return [Path(p) for p in sorted(found)]


def _plain_read(paths: list[Path]) -> None:
    for path in paths:
        with open(path, "rb") as handle:
            handle.read((1 << 20) + 1)


def _guarded_read(paths: list[Path]) -> None:
    for path in paths:
        read_regular(path, (1 << 20) + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    gen = _generator()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gen.build_kb(root, args.records)
        files = walk_records(root).files
        assert files == _os_walk(str(root / "records"))
        listing = _median(lambda: walk_records(root), args.repeat)
        listing_peer = _median(lambda: _os_walk(str(root / "records")), args.repeat)
        reading = _median(lambda: _guarded_read(files), args.repeat)
        reading_peer = _median(lambda: _plain_read(files), args.repeat)
    whole = walk_records(Path("/"))
    disk = _median(lambda: walk_records(Path("/")), args.repeat)
    result = {
        "records": len(files),
        "repeat": args.repeat,
        "walk_records_s": round(listing, 4),
        "os_walk_s": round(listing_peer, 4),
        "read_regular_s": round(reading, 4),
        "plain_open_read_s": round(reading_peer, 4),
        "read_difference_us_per_file": round((reading - reading_peer) / len(files) * 1e6, 2),
        "walk_of_root_s": round(disk, 3),
        "walk_of_root_findings": [f.rule for f in whole.findings],
        "machine": gen.machine(),
        "command": " ".join(["python", *sys.argv]),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"{len(files)} records: walk_records {listing:.3f} s (os.walk {listing_peer:.3f} s); "
        f"read_regular {reading:.3f} s (plain open+read {reading_peer:.3f} s, "
        f"difference {result['read_difference_us_per_file']} us/file); walk of / {disk:.2f} s "
        f"-> {result['walk_of_root_findings']}"
    )


if __name__ == "__main__":
    main()
