"""What the symlink-safe walk and the guarded reader cost on a 10,000-record KB, and `--kb /`.

Builds the KB with the clone generator of bench/validate_scale.py, then times, median of
`--repeat` runs, files warm in the page cache:

  (a) listing: `flopkb.load.walk.walk_records` beside the `os.walk` + suffix filter + `Path` list it
      replaced (the old `record_files`);
  (b) reading every file found: `flopkb.load.safefile.read_regular` (lstat, open with O_NOFOLLOW
      and O_NONBLOCK, fstat, reads sized by the file) beside the `open(path, "rb").read(limit)`
      it replaced (a buffered read of 1 MiB + 1 allocates that much for every small file);
  (c) `walk_records(Path("/"))`: the bounded walk of a whole filesystem (stops at its bound).

Writes --out (default bench/results/walk_read.json): the figures, the machine and the command.

    python bench/walk_read.py [--records 10000] [--repeat 5] [--out PATH]
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, median_s, parser, sibling, write_json
from flopkb.load.safefile import read_regular
from flopkb.load.walk import RECORD_SUFFIXES, walk_records


def _median(fn: Callable[[], Any], repeat: int) -> float:
    return median_s(fn, repeat)[0]


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
    args = parser(__doc__, out=RESULTS / "walk_read.json", repeat=5, records=10_000).parse_args()
    gen = sibling("validate_scale")
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
    write_json(args.out, result, indent=2)
    print(
        f"{len(files)} records: walk_records {listing:.3f} s (os.walk {listing_peer:.3f} s); "
        f"read_regular {reading:.3f} s (plain open+read {reading_peer:.3f} s, "
        f"difference {result['read_difference_us_per_file']} us/file); walk of / {disk:.2f} s "
        f"-> {result['walk_of_root_findings']}"
    )


if __name__ == "__main__":
    main()
