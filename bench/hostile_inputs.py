"""How long `flopkb validate` takes on worst-case records just under the size limit.

Each case writes one hostile record (at most `budget.MAX_BYTES`) into a copy of the small valid
KB of the tests and times `flopkb.validate.validate` on that KB in this process (best of
`--repeat`), beside the same KB without the hostile record (the baseline of the same run). The
cases are the time bombs found by attacking the validator: the closest-span hint, many keys,
many findings, huge numbers, deep nesting, aliases, many claim rows, unresolved references and
inline suppression comments, rows of sized magnitudes over long prose, and a 1M-character id
(each report's size in every format is recorded too).

Target (docs/performance.md): any record under the size limit validates in well under a second.
Writes --out (default bench/results/hostile_inputs.json): the figures, the machine, the command.

    python bench/hostile_inputs.py [--repeat 3] [--out bench/results/hostile_inputs.json]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, ROOT, parser, sibling, write_json
from flopkb import budget
from flopkb.report import FORMATTERS
from flopkb.validate import validate

SMALL_KB = ROOT / "tests" / "cases" / "valid" / "small-kb"
LIMIT = budget.MAX_BYTES - 4096
HEAD = "schema_version: 2\nkind: source\nsource_type: paper\ntitle: t\n"
HISTORY = "history: [{date: 2026-11-30, by: bench, note: hostile}]\n"
CLASS_HEAD = (
    "schema_version: 2\nkind: operator\ntitle: t\nhistory: [{date: 2026-11-30, by: b, note: n}]\n"
    "affected_by_hardware: [h100-sxm]\n"
)


def _fill(line: Callable[[int], str], budget_bytes: int) -> str:
    """As many `line(i)` as fit in `budget_bytes`."""
    out, size, i = [], 0, 0
    while True:
        text = line(i)
        if size + len(text) > budget_bytes:
            return "".join(out)
        out.append(text)
        size += len(text)
        i += 1


def many_keys() -> tuple[str, str]:
    return "sources/many-keys.yaml", "id: many-keys\n" + _fill(lambda i: f"k{i}: 1\n", LIMIT)


def flow_keys() -> tuple[str, str]:
    body = _fill(lambda i: f"k{i}: 1, ", LIMIT - 40)
    return "sources/flow-keys.yaml", "id: flow-keys\nkind: source\nx: {" + body + "z: 1}\n"


def keys_under_the_limit() -> tuple[str, str]:
    """Nested mappings of MAX_KEYS keys each, every key unknown: a finding per key."""
    per = budget.MAX_KEYS - 1
    block = "".join(f"  k{j}: 1\n" for j in range(per))
    body = _fill(lambda i: f"x{i}:\n{block}", LIMIT)
    return "sources/keys-under-limit.yaml", "id: keys-under-limit\n" + HEAD + HISTORY + body


def _words(n_chars: int, salt: int) -> str:
    vocab = ["scan", "ssd", "chunk", "tensor", "faster", "kernel", "state", "gemm", "ridge"]
    return _fill(lambda i: f"{vocab[(i * salt) % 9]}{i % 13} ", n_chars)


def span_hint_long_prose() -> tuple[str, str]:
    """Prose near the size limit, a non-verbatim effect at the hint's effect limit."""
    effect = _words(budget.HINT_MAX_EFFECT_CHARS - 10, 5).strip()
    prose = _words(LIMIT - 2000, 7)
    row = (
        f'  hardware_parameters:\n    - {{id: r, quantity: bf16_tensor_flops, effect: "{effect}",'
        " magnitude: qualitative, basis: unverified}\n"
    )
    text = f"id: span-long-prose\n{CLASS_HEAD}prose: {prose}\nflop:\n{row}"
    return "classes/span-long-prose.yaml", text


def span_hint_half_and_half() -> tuple[str, str]:
    """The issue's bomb: long prose and a long non-verbatim effect (half the file each)."""
    effect = _words(LIMIT // 2 - 1000, 5).strip()
    prose = _words(LIMIT // 2 - 1000, 7)
    row = (
        f'  hardware_parameters:\n    - {{id: r, quantity: bf16_tensor_flops, effect: "{effect}",'
        " magnitude: qualitative, basis: unverified}\n"
    )
    return "classes/span-half.yaml", f"id: span-half\n{CLASS_HEAD}prose: {prose}\nflop:\n{row}"


def span_hint_many_rows() -> tuple[str, str]:
    """Half a megabyte of prose and as many rows with 600-character non-verbatim effects as fit."""
    prose = _words(LIMIT // 2, 7)
    effect = _words(budget.HINT_MAX_EFFECT_CHARS - 10, 5).strip()
    rows = _fill(
        lambda i: f'    - {{id: r{i}, quantity: bf16_tensor_flops, effect: "{effect}", '
        "magnitude: qualitative, basis: unverified}\n",
        LIMIT // 2 - 200,
    )
    text = f"id: span-rows\n{CLASS_HEAD}prose: {prose}\nflop:\n  hardware_parameters:\n{rows}"
    return "classes/span-rows.yaml", text


def many_findings() -> tuple[str, str]:
    items = _fill(lambda i: f"  - {i % 10}\n", LIMIT - 200)
    text = "id: many-findings\n" + HEAD + HISTORY + "authors:\n" + items
    return "sources/many-findings.yaml", text


def huge_integers() -> tuple[str, str]:
    big = "9" * 5000
    return "sources/huge-ints.yaml", "id: huge-ints\n" + _fill(lambda i: f"k{i}: {big}\n", LIMIT)


def long_numbers_in_formulas() -> tuple[str, str]:
    formula = "hbm_bandwidth * 1" + "0" * (budget.MAX_FORMULA_CHARS - 20)
    text = (
        "id: q_formula\nschema_version: 2\nkind: quantity\ntitle: t\nunit: x\nmeaning: m\n"
        f"formula: '{formula}'\n{HISTORY}"
    )
    return "quantities/q_formula.yaml", text


def deep_nesting() -> tuple[str, str]:
    return "sources/deep.yaml", "id: deep\nx: " + "[" * 5000 + "]" * 5000 + "\n"


def aliases() -> tuple[str, str]:
    body = _fill(lambda i: f"a{i}: &x{i} [1]\nb{i}: *x{i}\n", LIMIT)
    return "sources/aliases.yaml", "id: aliases\n" + body


def long_text() -> tuple[str, str]:
    return "sources/long-text.yaml", "id: long-text\n" + HEAD.replace("title: t", "title: " +
                                                                     "x" * (LIMIT - 400)) + HISTORY


def many_claim_rows() -> tuple[str, str]:
    prose = "SSD is 2-8x faster than the scan. " * 20
    rows = _fill(
        lambda i: f'    - {{id: r{i}, quantity: bf16_tensor_flops, effect: "2-8x faster than the '
        'scan", magnitude: 2-8x, basis: cited, source: {id: dao-gu-2024-ssd, locator: S9}}\n',
        LIMIT - 2000,
    )
    text = f"id: many-rows\n{CLASS_HEAD}prose: {prose}\nflop:\n  hardware_parameters:\n{rows}"
    return "classes/many-rows.yaml", text


def unresolved_references() -> tuple[str, str]:
    refs = _fill(lambda i: f"  - h{i}00-sxm\n", LIMIT - 2000)
    text = (
        f"id: many-refs\n{CLASS_HEAD.replace('affected_by_hardware: [h100-sxm]', '')}"
        f"prose: p\naffected_by_hardware:\n{refs}"
    )
    return "classes/many-refs.yaml", text


def suppression_comments() -> tuple[str, str]:
    """A file of inline suppressions on their own lines (each once scanned the rest of the file)."""
    body = _fill(lambda i: "# flopkb: ignore[FKB122]\n", LIMIT - 200)
    return "sources/suppressions.yaml", "id: suppressions\n" + HEAD + HISTORY + body


def extract_bait_prose() -> tuple[str, str]:
    """One sentence of prose dense in extract's triggers ("cross" words far from "at 2K", figures,
    qualifiers); `flopkb extract` on it was quadratic (tests/unit/test_extract.py times that)."""
    unit = ("SSD crosses the scan and crossing again 2x faster 20% about at least ~3 x, "
            "beyond the a=b 1,979 TOPS from 12 to 3 times cross 1-2-3 up to ")
    prose = (unit * (LIMIT // len(unit)))[: LIMIT - 2000]
    return "classes/extract-bait.yaml", f"id: extract-bait\n{CLASS_HEAD}prose: '{prose}'\n"


def trailing_suppressions() -> tuple[str, str]:
    """Trailing suppressions, each once compared with every scalar of the file."""
    body = _fill(lambda i: f"  k{i}: 1  # flopkb: ignore[FKB122, FKB201]\n", LIMIT - 200)
    return "sources/trailing.yaml", "id: trailing\n" + HEAD + HISTORY + "x:\n" + body


def rows_over_prose() -> tuple[str, str]:
    """Half a megabyte of prose under as many `6x at 2048` / `6x at 2K` rows as fit (issue 18:
    the prose's number tokens were found again for every row, 36-232 s)."""
    prose = _words(LIMIT // 2, 7) + " SSD is 6x faster at 2048 tokens and 6x faster at 2K."
    rows = _fill(
        lambda i: f"    - {{id: r{i}, quantity: bf16_tensor_flops, effect: '6x faster at "
        f"{('2048 tokens', '2K')[i % 2]}', magnitude: '6x at {('2048', '2K')[i % 2]}', "
        "basis: unverified}\n",
        LIMIT // 2 - 200,
    )
    text = f"id: rows-prose\n{CLASS_HEAD}prose: {prose}\nflop:\n  hardware_parameters:\n{rows}"
    return "classes/rows-prose.yaml", text


def huge_id() -> tuple[str, str]:
    """A ~1M-character invalid id (issue 18: it was the `[record]` of every finding, 104 MB)."""
    return "sources/huge-id.yaml", "id: " + "a" * (LIMIT - 200) + "\n" + HEAD + HISTORY


CASES: dict[str, Callable[[], tuple[str, str]]] = {
    "many keys in one mapping": many_keys,
    "many keys in one flow mapping": flow_keys,
    "mappings of 999 unknown keys": keys_under_the_limit,
    "closest span: 1 MiB prose, 600-char effect": span_hint_long_prose,
    "closest span: half prose, half effect": span_hint_half_and_half,
    "closest span: many rows": span_hint_many_rows,
    "many findings (list items)": many_findings,
    "5,000-digit integers": huge_integers,
    "formula with a long constant": long_numbers_in_formulas,
    "deep flow nesting": deep_nesting,
    "anchors and aliases": aliases,
    "one long text field": long_text,
    "many claim rows": many_claim_rows,
    "many unresolved references": unresolved_references,
    "inline suppressions on their own lines": suppression_comments,
    "trailing inline suppressions": trailing_suppressions,
    "extract bait: 1 MiB sentence of figures": extract_bait_prose,
    "rows of `6x at 2048` over long prose": rows_over_prose,
    "a 1M-character id": huge_id,
}


def _time(folder: Path, repeat: int) -> tuple[float, float, Any]:
    """Best wall and best CPU seconds of `repeat` validations (CPU moves less on a busy host)."""
    best, best_cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = validate(folder)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu, result


def _compose_floor(data: bytes, repeat: int) -> float | None:
    """Best seconds of libyaml's bare `yaml.compose` of the record (None: it does not parse)."""
    import yaml

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            yaml.compose(data, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            return None
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    args = parser(__doc__, out=RESULTS / "hostile_inputs.json", repeat=3).parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="flopkb-hostile-") as tmp:
        base = Path(tmp) / "base"
        shutil.copytree(SMALL_KB, base)
        validate(base)  # warm-up: the first run imports the check modules
        baseline, baseline_cpu, _ = _time(base, args.repeat)
        print(f"{'baseline (small KB, no hostile record)':48s} {baseline:7.3f} s")
        for name, make in CASES.items():
            folder = Path(tmp) / f"case{len(rows)}"
            shutil.copytree(SMALL_KB, folder)
            rel, text = make()
            data = text.encode()
            assert len(data) <= budget.MAX_BYTES, (name, len(data))
            path = folder / "records" / rel
            path.write_bytes(data)
            seconds, cpu, result = _time(folder, args.repeat)
            rules = sorted({f.rule for f in result.findings})
            printed = {fmt: len(render(result)) for fmt, render in FORMATTERS.items()}
            rows.append(
                {
                    "case": name,
                    "bytes": len(data),
                    "seconds": seconds,
                    "cpu_s": cpu,
                    "over_baseline_s": seconds - baseline,
                    "yaml_compose_s": _compose_floor(data, args.repeat),
                    "findings": len(result.findings),
                    "rules": rules,
                    "exit_code": result.exit_code,
                    "report_bytes": printed,
                }
            )
            print(f"{name:48s} {seconds:7.3f} s (cpu {cpu:6.3f})  {len(data):>8d} B  "
                  f"{len(result.findings):>4d} findings {','.join(rules)}")  # fmt: skip
    worst = max(rows, key=lambda r: r["seconds"])
    figures = {
        "baseline_s": baseline,
        "baseline_cpu_s": baseline_cpu,
        "cases": rows,
        "worst": {"case": worst["case"], "seconds": worst["seconds"], "cpu_s": worst["cpu_s"]},
        "target_max_s": 1.0,
        "size_limit_bytes": budget.MAX_BYTES,
        "repeat": args.repeat,
        # the fingerprint bench/validate_scale.py writes (one definition for the CPU benches)
        "machine": sibling("validate_scale").machine(),
        "command": " ".join(["python", "bench/hostile_inputs.py", *sys.argv[1:]]),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(args.out, figures, indent=2)
    print(f"worst: {worst['case']} {worst['seconds']:.3f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
