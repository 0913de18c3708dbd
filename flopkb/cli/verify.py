"""`flopkb verify`: run the experiments behind the claims of the KB found and write evidence."""

from __future__ import annotations

import difflib
import os
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flopkb.atomic import check_folder, writing
from flopkb.cli.common import (
    FollowSymlinksOption,
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    err_console,
    fail,
    failing_on,
    kb_location,
    kb_root,
    plain,
    print_kb,
    safe_writes,
    write_policy,
)
from flopkb.cli.tables import IdTable
from flopkb.escape import visible
from flopkb.evidence.hashing import fresh_claims
from flopkb.evidence.signing import SigningError, ssh_keygen
from flopkb.evidence.store import evidence_dir
from flopkb.extras import install_hint
from flopkb.kb import load_kb
from flopkb.model.evidence import MAX_ROUNDS
from flopkb.plural import count

# What the `kernels` extra installs; verify imports all three (numpy through torch and the plots).
KERNEL_EXTRA_MODULES = ("torch", "triton", "numpy")

NO_GPU = ("--gpu needs a CUDA GPU and this process sees none (torch.cuda.is_available() is "
          "False); run without --gpu for the CPU checks and the plan.")


def _missing_kernel_extra() -> list[str]:
    """The modules of the `kernels` extra that cannot be imported here (with the reason when an
    installed one is broken rather than absent)."""
    missing = []
    for name in KERNEL_EXTRA_MODULES:
        try:
            __import__(name)
        except ModuleNotFoundError:
            missing.append(name)
        except ImportError as exc:
            missing.append(f"{name} ({exc})")
    return missing


class Impl(str, Enum):
    bundled = "bundled"
    peer = "peer"
    all = "all"


def _fmt_measured(m: dict[str, Any] | None) -> str:
    if not m or (m.get("value") is None and m.get("low") is None and m.get("high") is None):
        return "-"

    def f(x: Any) -> str:
        return "open" if x is None else f"{x:.3g}"

    return f"{f(m.get('value'))} [{f(m.get('low'))}, {f(m.get('high'))}] {m.get('unit', '')}"


def _fmt_cond(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    return ", ".join(f"{k}={v}" for k, v in c.items() if k not in {"pass", "quick"})


def _fmt_combo(combo: dict[str, str]) -> str:
    return ", ".join(f"{side}={impl}" for side, impl in combo.items())


def _failed_check(c: dict[str, Any]) -> str:
    """One failing CPU check row: which side and implementation (or kernel), at what shape and
    dtype, its error against its tolerance (or the error message)."""
    who = (f"side {c['side']}, implementation {c['implementation']}"
           if c.get("side") and c.get("implementation") else str(c.get("kernel", "?")))
    shape = "x".join(str(s) for s in c.get("shape") or [])
    at = ", ".join(x for x in (shape, str(c.get("dtype") or "")) if x)
    error, tol = c.get("error"), c.get("tolerance")
    if isinstance(error, (int, float)) and isinstance(tol, (int, float)):
        what = f"error {error:.3g} > tolerance {tol:.3g}"
    else:
        what = str(error)
    return f"FAILED {who}" + (f" [{at}]" if at else "") + f": {what}"


def _table(payload: dict[str, Any], plan_mode: bool) -> IdTable:
    table = IdTable(title="flopkb verify" + (" (plan, CPU checks)" if plan_mode else ""))
    for col in ("claim", "experiment", "verdict", "measured" if not plan_mode else "CPU check",
                "expected", "conditions / reason"):
        table.add_column(col, overflow="fold")
    for r in payload["results"]:
        if plan_mode:
            checks = r.get("cpu_check") or []
            bad = [c for c in checks if not c.get("ok")]
            # each failing row on a line of its own (a cell's lines, never a raw newline)
            lines = [f"{len(checks) - len(bad)}/{len(checks)} ok",
                     *(_failed_check(c) for c in bad[:4])]
        else:
            lines = [_fmt_measured(r.get("measured"))]
        expected = (r.get("expected") or {}).get("text", "-")
        verdict = r["verdict"]
        if r.get("implementation_sensitive"):
            verdict += " (implementation-sensitive)"
        judgements = r.get("judgements") or []
        if len(judgements) > 1:
            lines += [f"{_fmt_combo(j['combination'])}: {j['verdict']} "
                      f"{_fmt_measured(j.get('measured'))}" for j in judgements]
        tail = _fmt_cond(r.get("conditions"))
        if r.get("reason") and r["verdict"] not in {"confirmed", "refuted", "inconclusive"}:
            tail = f"{tail}; {r['reason']}" if tail != "-" else r["reason"]
        table.add_row(r.get("claim") or "-", r["experiment"], verdict, lines, expected, tail)
    return table


def verify(
    ctx: typer.Context,
    gpu: Annotated[
        bool, typer.Option("--gpu", help="time on the CUDA GPU and write evidence")
    ] = False,
    claim: Annotated[str | None, typer.Option("--claim", help="one claim: <record>/<row>")] = None,
    record: Annotated[str | None, typer.Option("--record", help="the claims of one record")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="fewer points and repetitions")] = False,
    impl: Annotated[
        Impl, typer.Option("--impl", help="bundled: each side's default implementation; peer: "
                           "its first peer; all: every combination, judged one by one")
    ] = Impl.bundled,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="evidence folder (default: the KB's records/evidence)"),
    ] = None,
    portable: Annotated[
        bool, typer.Option("--portable", help="take the kernel paths an Ampere/Ada GPU has (no "
                           "TMA, no Hopper-only schedules), also on a Hopper GPU")
    ] = False,
    memory_budget: Annotated[
        float | None, typer.Option("--memory-budget", metavar="GIB",
                                   help="allocate at most this much device memory, as on a "
                                   "smaller part (e.g. 24 for an RTX 4090)")
    ] = None,
    rounds: Annotated[
        int | None, typer.Option("--rounds", min=1, max=MAX_ROUNDS,
                                 help="independent rounds per claim point (default 3; 1 with "
                                 "--quick)")
    ] = None,
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", metavar="NAME", help="run the experiments of this suite "
                     "(repeatable; `all` for every suite). Default: `kernels` with --gpu (the "
                     "model-level `models` suite takes minutes per claim), every suite without; "
                     "--claim and --record run what they name whatever its suite"),
    ] = None,
    sign_key: Annotated[
        Path | None, typer.Option("--sign-key", help="SSH private key to sign each evidence "
                                  "record with (config key sign_key)")
    ] = None,
    recheck: Annotated[
        str | None, typer.Option("--recheck", metavar="EVIDENCE",
                                 help="measure this evidence record's claim again and say "
                                 "whether it reproduces within its interval (writes nothing)")
    ] = None,
    no_kb_code: Annotated[
        bool, typer.Option("--no-kb-code", help="plan without running any code the KB carries "
                           "(its hooks and kernels/: for an untrusted pull request); the "
                           "experiments left unchecked are listed")
    ] = False,
    stale: Annotated[
        bool, typer.Option("--stale", help="with --gpu: only the claims whose newest evidence "
                           "on this GPU's accelerator is stale (its kernels or judging rule "
                           "changed since) or missing")
    ] = False,
    follow_symlinks: FollowSymlinksOption = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Run the experiments linked from claim rows: CPU correctness checks and the plan, or with
    --gpu the timed runs, verdicts and evidence files. Each CPU check runs in a child process
    bounded by its declaration's time_limit_s and a memory cap."""
    if no_kb_code and (gpu or recheck is not None):
        fail("--no-kb-code is for the plan (no --gpu, no --recheck): a timed run is of the KB's "
             "kernels")
    if not gpu:
        # the CPU plan runs the kernels through Triton's interpreter, which is chosen when triton
        # is first imported (the check below imports it)
        os.environ.setdefault("TRITON_INTERPRET", "1")
    missing = _missing_kernel_extra()
    if missing:
        fail(f"verify needs the kernels extra (missing: {', '.join(missing)}): "
             f"{install_hint('kernels')}")
    # the run's modules are imported when a run is asked for: every other command (validate
    # first) never loads them
    from flopkb.verify import cpu, execute, plan

    root = kb_root(ctx)
    kb, _ = load_kb(root)
    config = kb_location(ctx).config
    key = sign_key or config.sign_key
    if key is not None and not key.is_file():
        fail(f"no such signing key: {key}")
    if key is not None:
        with failing_on(SigningError):
            ssh_keygen()
    if recheck is not None:
        _recheck(ctx, kb, root, recheck, gpu=gpu, rounds=rounds, fmt=fmt)
    if claim is not None and kb.claim(claim) is None:
        fail(f"no claim {claim!r} in the KB at {root}{_closest_claims(kb, claim)}")
    if record is not None and record not in kb.classes:
        close = difflib.get_close_matches(record, sorted(kb.classes), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        fail(f"no class record {record!r} in the KB at {root}{hint}")
    skip: set[str] = set()
    if stale:
        if not gpu:
            fail("--stale picks the claims to time again on this GPU: it needs --gpu")
        if not execute.gpu_available():
            fail(NO_GPU)
        skip = fresh_claims(kb, execute.gpu_accelerator(kb))
    jobs, broken = plan.plan(kb, claim=claim, record=record,
                             suites=chosen_suites(suite, gpu), skip=skip)
    if stale and not jobs and not broken:
        err_console.print("flopkb: nothing is stale: every claim selected has fresh evidence on "
                          "this GPU's accelerator", markup=False, highlight=False)
        raise typer.Exit(0)
    if claim is not None and not jobs:
        # nothing of this claim can run: say why in one line, run nothing (not even calibration)
        payload = {"machine": None, "results": [r.as_dict() for r in broken], "duration_s": 0.0}
        if fmt is OutputFormat.json:
            emit_json(payload)
        else:
            # the reason quotes record text (a not_applicable reason): escaped for the terminal
            err_console.print(f"flopkb: {visible(broken[0].reason)}", markup=False,
                              highlight=False)
        # a row excused by design (`verify.not_applicable`) is the KB saying so, not a failure
        raise typer.Exit(0 if all(r.verdict == "not-applicable" for r in broken) else 1)
    command = " ".join(["flopkb", *sys.argv[1:]]) if sys.argv else "flopkb verify"
    started = time.monotonic()
    show = fmt is OutputFormat.text
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console, disable=not show, transient=True)
    task = None

    def on_event(kind: str, payload: dict[str, Any]) -> None:
        nonlocal task
        if kind == "start":
            task = progress.add_task("verify", total=payload["total"])
        elif kind == "begin" and task is not None:
            progress.update(task, description=payload["experiment"])
        elif kind == "advance" and task is not None:
            progress.update(task, advance=1, description=payload["experiment"])
        elif kind == "result" and not err_console.is_terminal:
            # logs (CI, a remote GPU job) get one line per verdict as it comes
            err_console.print(plain(f"{payload['experiment']}: {payload.get('claim') or '-'} "
                                    f"{payload['verdict']}"), highlight=False)

    if not gpu:
        extra = plan.unlinked(kb) if claim is None and record is None else []
        with progress:
            results = cpu.run_cpu(kb, jobs, extra, on_event=on_event, kb_code=not no_kb_code)
        payload = {"machine": None, "results": [r.as_dict() for r in broken + results],
                   "duration_s": round(time.monotonic() - started, 2)}
        if no_kb_code:
            payload["not_checked"] = cpu.skipped_experiments(results)
        # a claim linking an unknown experiment (`broken`) fails the plan as it fails a GPU run
        failed = bool(broken) or any(not c.get("ok") for r in results for c in (r.cpu_check or []))
        _report(payload, fmt, plan_mode=True)
        if fmt is OutputFormat.text:
            if no_kb_code:
                names = payload["not_checked"]
                err_console.print(plain(
                    f"not checked (--no-kb-code: they run the KB's code): {', '.join(names)}"
                    if names else "--no-kb-code: every check ran flopkb's code only"),
                    highlight=False)
            print_kb(ctx)
        raise typer.Exit(1 if failed else 0)
    # evidence records belong in records/; every file gets a fresh name, so none is replaced
    policy = write_policy(ctx, follow_symlinks=follow_symlinks, records=True)
    with safe_writes(policy):
        check_folder(out or evidence_dir(root), policy)  # a usage error: before anything runs
    if not execute.gpu_available():
        fail(NO_GPU)
    with progress, writing(policy):
        machine, results = execute.run_gpu(kb, jobs, quick=quick, impl=impl.value,
                                           command=command, out_dir=out, on_event=on_event,
                                           portable=portable, memory_budget_gb=memory_budget,
                                           rounds=rounds, sign_key=key)
    if results is None:
        return
    payload = {"machine": machine, "results": [r.as_dict() for r in broken + results],
               "duration_s": round(time.monotonic() - started, 2)}
    _report(payload, fmt, plan_mode=False)
    if fmt is OutputFormat.text:
        print_kb(ctx)
    raise typer.Exit(1 if any(r["verdict"] == "error" for r in payload["results"]) else 0)


def _recheck(ctx: typer.Context, kb: Any, root: Path, given: str, *, gpu: bool,
             rounds: int | None, fmt: OutputFormat) -> NoReturn:
    """`--recheck EVIDENCE`: the record's claim measured again; exit 1 unless it reproduces."""
    from flopkb.verify.execute import gpu_available
    from flopkb.verify.recheck import recheck, reproduces

    if not gpu:
        fail("--recheck measures again: it needs --gpu")
    eid = Path(given).stem if given.endswith(".yaml") else given
    ev = kb.evidence.get(eid)
    if ev is None:
        fail(f"no evidence record {given!r} in the KB at {root}")
    if not gpu_available():
        fail("--gpu needs a CUDA GPU and this process sees none (torch.cuda.is_available() is "
             "False)")
    with failing_on(ValueError):
        machine, outcomes = recheck(kb, ev, rounds=rounds,
                                    command=f"flopkb verify --gpu --recheck {eid}")
    ok = reproduces(outcomes)
    if fmt is OutputFormat.json:
        emit_json({"evidence": eid, "machine": machine, "reproduces": ok,
                   "combinations": [o.as_dict() for o in outcomes]})
    else:
        table = IdTable(title=f"recheck of {eid}")
        for column in ("combination", "then", "now", "status"):
            table.add_column(column, overflow="fold")
        for o in outcomes:
            then = (f"{o.verdict_then} {o.then.value} [{o.then.low}, {o.then.high}]"
                    if o.then else o.verdict_then)
            table.add_row(", ".join(f"{k}={v}" for k, v in o.combination.items()) or "-",
                          then, f"{o.verdict_now or '-'} {o.value_now}", o.status)
        console.print(table)
        console.print("reproduces" if ok else "does not reproduce", markup=False)
    raise typer.Exit(0 if ok else 1)


def _report(payload: dict[str, Any], fmt: OutputFormat, plan_mode: bool) -> None:
    if fmt is OutputFormat.json:
        return emit_json(payload)
    m = payload["machine"]
    if m:
        acc = m.get("accelerator") or "no accelerator record"
        console.print(plain(f"machine: {m.get('gpu')} -> {acc}"
                            f" (torch {m.get('torch')}, triton {m.get('triton')}, "
                            f"CUDA {m.get('cuda')})"), highlight=False)
    console.print(_table(payload, plan_mode))
    counts: dict[str, int] = {}
    for r in payload["results"]:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    console.print(plain(f"{count(len(payload['results']), 'result')} ({summary}) in "
                        f"{payload['duration_s']:.1f} s"), highlight=False)

DEFAULT_GPU_SUITE = "kernels"


def chosen_suites(given: list[str] | None, gpu: bool) -> set[str] | None:
    """The suites a run takes: those given (`all`: every suite, None), else `kernels` on the GPU
    and every suite for the CPU plan (its checks are quick)."""
    if given:
        return None if "all" in given else set(given)
    return {DEFAULT_GPU_SUITE} if gpu else None



def _closest_claims(kb: Any, claim: str) -> str:
    """` (did you mean a/b, a/c?)`: the closest rows of the record named, or, when there is no
    such record, the closest claim ids of the KB; `` when nothing is close. Printed through
    `fail`, which escapes it."""
    record_id, _, row_id = claim.partition("/")
    record = kb.classes.get(record_id)
    if record is not None:
        rows = [r.id for r in record.flop.hardware_parameters]
        close = [f"{record_id}/{r}" for r in difflib.get_close_matches(row_id, rows, n=3)]
        if not close:
            shown = ", ".join(rows[:5]) + (", ..." if len(rows) > 5 else "")
            return f" (record {record_id} has the rows: {shown})" if rows else (
                f" (record {record_id} has no claim rows)")
    else:
        ids = [f"{rid}/{r.id}" for rid, rec in sorted(kb.classes.items())
               for r in rec.flop.hardware_parameters]  # fmt: skip
        close = difflib.get_close_matches(claim, ids, n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""
