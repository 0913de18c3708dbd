"""How fast the tools run on the CPU (docs/performance.md, docs/verify.md): the test suite,
verify's plan mode, validate and the graph at 10,000 records, the filesystem walk, the hostile
inputs, each from its bench/ script's results file."""

from __future__ import annotations

from typing import Any

from .fmt import paragraph, table
from .sources import Sources


def block_cpu_times(src: Sources) -> str:
    path, t = src.json("cpu-times", "times")
    load = t["load_average_before"][0]
    busy = load > t["machine"]["cpus"]
    shared = f", shared with other jobs (load average {load:.1f})" if busy else ""
    return paragraph(
        f"On the CPU the test suite (`{t['suite_command']}`) takes about "
        f"{t['suite_s'] / 60:.0f} minutes on {t['machine']['cpus']} cores{shared}: "
        f"{t['suite_cpu_s'] / 60:.1f} CPU-minutes, {t['suite_passed']} passed ({t['date']}, "
        f"`bench/cpu_times.py`, `{path}`).")


def block_plan_time(src: Sources) -> str:
    path, t = src.json("plan-time", "times")
    load = t["load_average_before"][0]
    return paragraph(
        f"The CPU plan mode (`flopkb verify`, Triton interpreter) takes about {t['plan_s']:.0f} s "
        f"on {t['machine']['cpus']} cores at load average {load:.1f} ({t['plan_cpu_s']:.0f} "
        f"CPU-seconds, `{path}`).")


def block_suite_beside_hog(src: Sources) -> str:
    """The whole CI command beside a CPU-bound process (bench/suite_beside_hog.sh): the newest
    attempt first, then the earlier ones."""
    path, h = src.json("suite-beside-hog", "attempts")
    m = h["machine"]
    parts = []
    for a in reversed(h["attempts"]):
        runs = a["runs"]
        ok = sum(1 for r in runs if r["rc"] == 0)
        walls = ", ".join(f"{r['wall_s'] / 60:.0f}" for r in runs)
        failed = sorted({t.split("::")[-1] for r in runs for t in r["failed"]})
        parts.append(f"at commit {a['commit'][:7]}: {ok} of {len(runs)} runs passed, {walls} min "
                     "wall" + (f"; failed: `{'`, `'.join(failed)}`" if failed else ""))
    newest, earlier = parts[0], parts[1:]
    return paragraph(
        f"`.ci/run` in a fresh clone, three times in a row beside one CPU-bound process on "
        f"{m['cpus']} cores ({m['cpu']}), so that the tests get one core as on a busy CI runner "
        f"(`bench/suite_beside_hog.sh`, then `bench/suite_beside_hog.py`; `{path}`): newest "
        f"{newest}" + (f". Earlier trees: {'; '.join(earlier)}" if earlier else "") + ".")


def block_validate_table(src: Sources) -> str:
    path, v = src.json("validate-table", "scale")
    m, cpu, t = v["machine"], v["cpu_s"], v["targets"]
    files = v["composition"]
    mb = sum(c["bytes"] for c in files.values()) / 1e6
    serial_over_a = v["b_serial_s"] / v["a_libyaml_parse_s"]
    met = v["b_over_a"] <= t["b_over_a_max"] and v["c_over_b"] >= t["c_over_b_min"]
    head = paragraph(
        f"Figures of the committed run (`{v['command']}`, {v['timestamp'][:10]}, "
        f"{m['cpu_count']}-CPU VM, Python {m['python']}, PyYAML {m['pyyaml']} on libyaml "
        f"{m['libyaml']}, pydantic {m['pydantic']}; median of {len(v['runs']['b']['runs_s'])}, "
        f"wall clock, interpreter start-up included; `{path}`):")
    rows = [
        ["(a)", "libyaml parse, `yaml.load(CSafeLoader)` (floor)",
         f"{v['a_libyaml_parse_s']:.1f} s", f"{cpu['a']:.1f} s"],
        ["(b)", f"`flopkb validate` ({m['cpu_count']} workers)",
         f"**{v['b_flopkb_validate_s']:.1f} s = {v['b_over_a']:.2f} x (a)**", f"{cpu['b']:.1f} s"],
        ["(b)", "`flopkb validate`, `FLOPKB_WORKERS=1`",
         f"{v['b_serial_s']:.1f} s = {serial_over_a:.2f} x (a)", f"{cpu['b_serial']:.1f} s"],
        ["(c)", "`check-jsonschema --schemafile schema/record.schema.json` (peer)",
         f"{v['c_check_jsonschema_s']:.0f} s = **{v['c_over_b']:.1f} x (b)**", ""],
    ]
    kinds = ", ".join(f"{c['files']:,} {k}" for k, c in sorted(files.items()))
    tail = paragraph(
        f"Targets: (b) <= {t['b_over_a_max']:g} x (a) and (c) >= {t['c_over_b_min']:g} x (b): "
        f"{'both met' if met else 'not both met'}. The KB holds {v['records']:,} files, "
        f"{mb:.0f} MB: {kinds} (clones of the bundled KB of that day); it validates with "
        f"{v['validate_result']['errors']} errors and {v['validate_result']['warnings']} "
        "warnings (graph rules).")
    return (head + "\n" + table(["", "what", "wall", "CPU"], rows) + "\n" + tail + "\n"
            + _classes_only(v["classes_only"]))


def _classes_only(c: dict[str, Any]) -> str:
    """The class-records-only KB: no number-heavy evidence files to flatter the ratio."""
    files = c["composition"]
    mb = sum(f["bytes"] for f in files.values()) / 1e6
    runs = len(c["runs"]["b"]["runs_s"])
    return paragraph(
        f"On a KB of class records only ({files['classes']['files']:,} clones of the bundled "
        "classes plus the accelerators, quantities and sources they cite, no evidence, "
        f"{mb:.0f} MB; `{c['command']}`, {c['timestamp'][:10]}, median of {runs}): bare "
        f"`yaml.compose` {c['a0_yaml_compose_s']:.1f} s, the `yaml.load(CSafeLoader)` floor "
        f"{c['a_libyaml_parse_s']:.1f} s, `flopkb validate` **{c['b_flopkb_validate_s']:.1f} s "
        f"= {c['b_over_a']:.2f}x the floor** (target <= {c['targets']['b_over_a_max']:g}x; "
        f"{c['b_over_a_best_runs']:.2f}x best run against best run); with one worker "
        f"{c['b_serial_s']:.1f} s = {c['b_serial_over_a']:.2f}x. Wall ratios move between runs "
        "on a shared machine; the JSON keeps every run of each command.")


def block_graph_speed(src: Sources) -> str:
    path, v = src.json("graph-speed", "scale")
    m, a = v["machine"], v["affects_s"]
    return paragraph(
        f"On a {v['records']:,}-record KB (clones of the bundled KB made by the generator of "
        f"`bench/validate_scale.py`: {v['graph']['nodes']:,} nodes, {v['graph']['edges']:,} "
        f"edges), building the graph and answering `affects` takes "
        f"**{v['build_plus_affects_s']:.2f} s** beyond loading (target {v['target_s']:g} s; "
        f"median of {v['repeat']}; `affects` itself {a['quantity']['seconds'] * 1e3:.1f} ms for "
        f"a quantity, {a['accelerator']['seconds'] * 1e3:.1f} ms for an accelerator, "
        f"{a['source']['seconds'] * 1e3:.1f} ms for a source). The same nodes and edges added to "
        f"an empty networkx DiGraph with nothing else take {v['peer_bare_networkx_build_s']:.2f} "
        f"s. For information: `status` {v['status_s']:.2f} s, the FKB6xx checks over the whole "
        f"KB {v['graph_checks_s']:.1f} s, `load_kb` itself {v['load_kb_s']:.1f} s (not counted). "
        f"{m['cpu_count']}-CPU VM, Python {m['python']}, networkx {m['networkx']} "
        f"(`{v['command']}`, `{path}`).")


def block_walk_read(src: Sources) -> str:
    path, w = src.json("walk-read", "walk")
    return paragraph(
        f"The guarded walk and reads (`bench/walk_read.py`, {w['records']:,} records, "
        f"{w['machine']['cpu_count']}-CPU VM, median of {w['repeat']}, `{path}`): the walk lists "
        f"them in {w['walk_records_s']:.3f} s (a bare `os.walk`: {w['os_walk_s']:.3f} s), and "
        f"reading them takes {w['read_regular_s']:.2f} s against {w['plain_open_read_s']:.2f} s "
        "for a plain buffered `open().read(1 MiB + 1)` per file (the guarded read is sized by "
        f"the file); the bounded walk of `/` stops ({', '.join(w['walk_of_root_findings'])}) "
        f"after {w['walk_of_root_s']:.2f} s.")


def block_hostile_inputs(src: Sources) -> str:
    path, h = src.json("hostile-inputs", "cases")
    rows = [[c["case"], f"{c['bytes'] / 2**20:.2f} MiB", f"{c['seconds']:.3f} s",
             ", ".join(c["rules"]), str(c["findings"])]
            for c in sorted(h["cases"], key=lambda c: -c["seconds"])]
    worst = h["worst"]
    return paragraph(
        f"Worst cases just under the {h['size_limit_bytes'] // 2**20} MiB size limit, each in a "
        f"copy of a small test KB (`{h['command']}`, {h['timestamp'][:10]}, "
        f"{h['machine']['cpu_count']}-CPU VM, best of {h['repeat']}, `{path}`); the slowest is "
        f"\"{worst['case']}\" at {worst['seconds']:.2f} s against a target of "
        f"{h['target_max_s']:g} s:") + "\n" + table(
        ["case", "size", "validate", "rules", "findings"], rows)
