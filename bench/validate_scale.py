"""How fast `flopkb validate` checks a 10,000-record KB, beside its floor and its peer.

Builds the KB in a temporary folder from clones of the bundled records under new ids (each clone
group is a full copy of the KB with every reference renamed, so the big KB is as valid as the
bundled one), then times, in one run and as subprocesses (interpreter start-up included):

  (a) floor: the bare libyaml parse of the same files, `yaml.load(..., Loader=yaml.CSafeLoader)`;
  (b) `flopkb validate DIR --format json` (load, structure, references, provenance, graph);
  (c) peer: `check-jsonschema --schemafile schema/record.schema.json FILES...`.

(b) is also timed with FLOPKB_WORKERS=1 (one process, no pool), and CPU time is recorded beside
wall time: on a busy machine the wall figures move, the CPU figures much less.

A second KB holds class records only: 10,000 clones of the bundled class records, with
the bundled accelerators, quantities and sources they reference and no evidence (evidence files
are number-heavy, where flopkb's own value builder beats PyYAML's constructor and flatters the
ratio). There the bench times (a0) the bare `yaml.compose` of the files (libyaml's node tree, no
values), (a) the `yaml.load(CSafeLoader)` floor and (b) `flopkb validate`.

Targets: (b) <= 1.5 x (a) on both KBs, and (b) >= 10 x faster than (c).
Writes --out (default bench/results/validate_scale.json): the figures, machine and command.

    python bench/validate_scale.py [--records 10000] [--repeat 3] [--skip-peer] [--classes-only]
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, parser, write_json

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schema" / "record.schema.json"
FLOOR = (
    "import pathlib, sys, yaml\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.yaml')):\n"
    "    yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader)\n"
)
COMPOSE = (
    "import pathlib, sys, yaml\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.yaml')):\n"
    "    yaml.compose(p.read_bytes(), Loader=yaml.CSafeLoader)\n"
)


def _source_records(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in sorted((root / "records").rglob("*.yaml")):
        data = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            out.append((path.relative_to(root / "records"), data))
    return out


def _renamed(value: Any, ids: dict[str, str], word: re.Pattern[str]) -> Any:
    """`value` with every string equal to a record id (or `<class>/<row>`) renamed; formulas too."""
    if isinstance(value, dict):
        return {ids.get(k, k): _renamed(v, ids, word) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, ids, word) for v in value]
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        head, slash, tail = value.partition("/")
        if slash and head in ids and re.fullmatch(r"[a-z0-9][a-z0-9-]*", tail):
            return f"{ids[head]}/{tail}"
    return value


def build_kb(target: Path, n_records: int, source_root: Path = REPO) -> int:
    """Write `n_records` records (whole clone groups of the bundled KB) under `target/records`."""
    records = _source_records(source_root)
    if not records:
        raise SystemExit(f"no records under {source_root / 'records'}")
    written = 0
    group = 0
    while written < n_records:
        # whole groups while they fit; the remainder is filled with sources (they reference
        # nothing), so that no clone points at a record that was not written
        partial = n_records - written < len(records)
        ids = {
            data["id"]: (
                f"{data['id']}_c{group}"
                if data.get("kind") == "quantity"
                else f"{data['id']}-c{group}"
            )
            for _, data in records
        }
        names = "|".join(map(re.escape, sorted(ids, key=len, reverse=True)))
        word = re.compile(rf"\b({names})\b")
        for rel, data in records:
            if written >= n_records:
                break
            if partial and data.get("kind") != "source":
                continue
            clone = _renamed(data, ids, word)
            if isinstance(clone.get("formula"), str):
                clone["formula"] = word.sub(lambda m, ids=ids: ids[m.group(1)], clone["formula"])
            for row in clone.get("flop", {}).get("hardware_parameters", []) or []:
                if isinstance(row.get("formula"), str):
                    row["formula"] = word.sub(lambda m, ids=ids: ids[m.group(1)], row["formula"])
            path = target / "records" / rel.parent / f"{clone['id']}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = yaml.dump(clone, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)
            path.write_text(text)
            written += 1
        group += 1
    return written


def build_class_kb(target: Path, n_classes: int, source_root: Path = REPO) -> int:
    """`n_classes` clones of the bundled class records plus the records they reference, no evidence.

    Accelerators, quantities and sources are written once under their own ids; each class clone
    gets a new id. Without evidence a `measured` row cannot be earned, so clones carry such rows
    as `unverified` (and drop what an unverified row must not carry): the KB stays valid.
    """
    records = _source_records(source_root)
    classes = [(rel, data) for rel, data in records if data.get("kind") in ("operator", "model")]
    support = [
        (rel, d) for rel, d in records if d.get("kind") in ("accelerator", "quantity", "source")
    ]
    if not classes:
        raise SystemExit(f"no class records under {source_root / 'records'}")
    written = 0
    for rel, data in support:
        path = target / "records" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)
        path.write_text(text)
        written += 1
    folder = target / "records" / "classes"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n_classes):
        _, data = classes[k % len(classes)]
        clone = json.loads(json.dumps(data, default=str))
        clone["id"] = f"{data['id']}-c{k // len(classes)}"
        # `related` names other classes; the clone group of this index may not hold them all
        clone.pop("related", None)
        for row in clone.get("flop", {}).get("hardware_parameters", []) or []:
            if row.get("basis") == "measured":
                row["basis"] = "unverified"
                row.pop("source", None)
                row.pop("formula", None)
        text = yaml.dump(clone, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)
        (folder / f"{clone['id']}.yaml").write_text(text)
        written += 1
    return written


def _time(
    cmd: list[str],
    cwd: Path,
    repeat: int,
    ok_codes: tuple[int, ...] = (0,),
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Wall time (median of `repeat`) and CPU time (user + sys of the process and its workers)."""
    runs, cpu = [], []
    code = None
    for _ in range(repeat):
        # the page cache is warm for every run: the KB was just written, and (a) runs first
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True)
        runs.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        code = proc.returncode
        if code not in ok_codes:
            sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
            raise SystemExit(f"{cmd[:3]} exited {code}")
    return {
        "median_s": statistics.median(runs),
        "min_s": min(runs),
        "runs_s": runs,
        "cpu_s": statistics.median(cpu),
        "exit_code": code,
    }


def machine() -> dict[str, Any]:
    import pydantic

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "pyyaml": yaml.__version__,
        "libyaml": ".".join(map(str, __import__("yaml._yaml", fromlist=["x"]).get_version())),
        "pydantic": pydantic.VERSION,
        # other jobs on the machine move wall times; the load says how busy it was
        "load_average_1_5_15": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _interleaved(
    commands: list[tuple[list[str], dict[str, str] | None]], cwd: Path, repeat: int
) -> list[dict[str, Any]]:
    """`_time` of each command, one run of each in turn, `repeat` rounds."""
    rounds = [[_time(cmd, cwd, 1, env=env) for cmd, env in commands] for _ in range(repeat)]
    out = []
    for i in range(len(commands)):
        runs = [r[i]["runs_s"][0] for r in rounds]
        cpu = [r[i]["cpu_s"] for r in rounds]
        out.append(
            {
                "median_s": statistics.median(runs),
                "min_s": min(runs),
                "runs_s": runs,
                "cpu_s": statistics.median(cpu),
                "exit_code": rounds[-1][i]["exit_code"],
            }
        )
    return out


def _composition(root: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path in sorted((root / "records").rglob("*.yaml")):
        folder = out.setdefault(path.parent.name, {"files": 0, "bytes": 0})
        folder["files"] += 1
        folder["bytes"] += path.stat().st_size
    return out


def classes_only(n_classes: int, repeat: int) -> dict[str, Any]:
    """(a0) compose, (a) CSafeLoader floor, (b) validate on a KB of class records, no evidence."""
    with tempfile.TemporaryDirectory(prefix="flopkb-classes-") as tmp:
        root = Path(tmp)
        n = build_class_kb(root, n_classes)
        validate_cmd = [sys.executable, "-m", "flopkb", "validate", "records", "--format", "json"]
        # interleaved (a0, a, b, b serial, a0, a, ...): on a shared machine the load drifts within
        # a minute, and it should weigh on the floor and on validate alike
        compose, floor, ours, serial = _interleaved(
            [
                ([sys.executable, "-c", COMPOSE, "records"], None),
                ([sys.executable, "-c", FLOOR, "records"], None),
                (validate_cmd, None),
                (validate_cmd, {"FLOPKB_WORKERS": "1"}),
            ],
            root,
            repeat,
        )
        result = json.loads(
            subprocess.run(validate_cmd, cwd=root, capture_output=True, text=True).stdout
        )
        figures = {
            "records": n,
            "composition": _composition(root),
            "a0_yaml_compose_s": compose["median_s"],
            "a_libyaml_parse_s": floor["median_s"],
            "b_flopkb_validate_s": ours["median_s"],
            "b_over_a": ours["median_s"] / floor["median_s"],
            "b_over_a_best_runs": ours["min_s"] / floor["min_s"],
            "b_serial_over_a_best_runs": serial["min_s"] / floor["min_s"],
            "b_cpu_over_a_cpu": ours["cpu_s"] / floor["cpu_s"],
            "b_serial_cpu_over_a_cpu": serial["cpu_s"] / floor["cpu_s"],
            "a0_over_a": compose["median_s"] / floor["median_s"],
            "b_serial_s": serial["median_s"],
            "b_serial_over_a": serial["median_s"] / floor["median_s"],
            "targets": {"b_over_a_max": 1.5},
            "validate_result": {
                "ok": result["ok"],
                "records": result["records"],
                "errors": len(result["errors"]),
                "warnings": len(result["warnings"]),
            },
            "cpu_s": {
                "a0": compose["cpu_s"], "a": floor["cpu_s"], "b": ours["cpu_s"],
                "b_serial": serial["cpu_s"],
            },
            "runs": {"a0": compose, "a": floor, "b": ours, "b_serial": serial},
            "machine": machine(),
            "command": " ".join(["python", "bench/validate_scale.py", *sys.argv[1:]]),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    print(f"class-only KB: {n} records")
    print(f"(a0) yaml.compose            {figures['a0_yaml_compose_s']:.2f} s")
    print(f"(a)  yaml.load(CSafeLoader)  {figures['a_libyaml_parse_s']:.2f} s")
    print(
        f"(b)  flopkb validate         {figures['b_flopkb_validate_s']:.2f} s   "
        f"= {figures['b_over_a']:.2f} x (a)   (serial {figures['b_serial_s']:.2f} s)"
    )
    return figures


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "validate_scale.json", repeat=3, records=10_000)
    ap.add_argument("--skip-peer", action="store_true", help="do not run check-jsonschema")
    ap.add_argument("--classes-only", action="store_true",
                    help="time only the class-only KB; keep the other figures already in --out")
    args = ap.parse_args()
    if args.classes_only:
        previous = json.loads(args.out.read_text()) if args.out.exists() else {}
        previous["classes_only"] = classes_only(args.records, args.repeat)
        write_json(args.out, previous, indent=2)
        print(f"wrote {args.out}")
        return

    with tempfile.TemporaryDirectory(prefix="flopkb-scale-") as tmp:
        root = Path(tmp)
        n = build_kb(root, args.records)
        files = sorted(str(p.relative_to(root)) for p in (root / "records").rglob("*.yaml"))
        composition: dict[str, dict[str, int]] = {}
        for name in files:
            folder = composition.setdefault(Path(name).parent.name, {"files": 0, "bytes": 0})
            folder["files"] += 1
            folder["bytes"] += (root / name).stat().st_size
        floor = _time([sys.executable, "-c", FLOOR, "records"], root, args.repeat)
        validate_cmd = [sys.executable, "-m", "flopkb", "validate", "records", "--format", "json"]
        ours = _time(validate_cmd, root, args.repeat)
        serial = _time(validate_cmd, root, args.repeat, env={"FLOPKB_WORKERS": "1"})
        result = json.loads(
            subprocess.run(
                [sys.executable, "-m", "flopkb", "validate", "records", "--format", "json"],
                cwd=root, capture_output=True, text=True, check=False,
            ).stdout
        )  # fmt: skip
        peer = None
        if not args.skip_peer:
            exe = shutil.which("check-jsonschema") or str(
                Path(sys.executable).parent / "check-jsonschema"
            )
            peer = _time([exe, "--schemafile", str(SCHEMA), *files], root, 1, ok_codes=(0, 1))
    figures = {
        "records": n,
        "composition": composition,
        "a_libyaml_parse_s": floor["median_s"],
        "b_flopkb_validate_s": ours["median_s"],
        "c_check_jsonschema_s": peer["median_s"] if peer else None,
        "b_over_a": ours["median_s"] / floor["median_s"],
        "c_over_b": (peer["median_s"] / ours["median_s"]) if peer else None,
        "targets": {"b_over_a_max": 1.5, "c_over_b_min": 10.0},
        "validate_result": {
            "ok": result["ok"],
            "records": result["records"],
            "errors": len(result["errors"]),
            "warnings": len(result["warnings"]),
        },
        "b_serial_s": serial["median_s"],
        "cpu_s": {"a": floor["cpu_s"], "b": ours["cpu_s"], "b_serial": serial["cpu_s"]},
        "runs": {"a": floor, "b": ours, "b_serial": serial, "c": peer},
        "machine": machine(),
        "command": " ".join(["python", "bench/validate_scale.py", *sys.argv[1:]]),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "classes_only": classes_only(args.records, args.repeat),
    }
    write_json(args.out, figures, indent=2)
    c = f"{figures['c_check_jsonschema_s']:.2f} s" if peer else "skipped"
    print(f"{n} records on {figures['machine']['cpu_count']} CPUs")
    print(f"(a) libyaml parse (floor)   {figures['a_libyaml_parse_s']:.2f} s")
    print(
        f"(b) flopkb validate         {figures['b_flopkb_validate_s']:.2f} s   "
        f"= {figures['b_over_a']:.2f} x (a)"
    )
    print(f"    serial (FLOPKB_WORKERS=1) {figures['b_serial_s']:.2f} s")
    cpu = figures["cpu_s"]
    print(f"CPU: (a) {cpu['a']:.2f} s, (b) {cpu['b']:.2f} s, serial (b) {cpu['b_serial']:.2f} s")
    print(
        f"(c) check-jsonschema (peer) {c}"
        + (f"   = {figures['c_over_b']:.1f} x (b)" if peer else "")
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
