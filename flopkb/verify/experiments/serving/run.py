"""The serving experiments' device side: every declared implementation of every layer type
checked against the layer's float32 reference at a small shape, then timed at the claim's shape
(decode as a CUDA graph replay, `ctx.time(decode=True)`), against the layer's floor
(`flopkb.architecture.layer_floor`). Runs on the CPU only in tests, with a stand-in timer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.architecture.layer_floor import layer_work
from flopkb.architecture.serving import layer_counts
from flopkb.evidence.measurement import Measurement
from flopkb.evidence.stats import Interval
from flopkb.verify.errors import ExperimentError, PeerUnavailable

from .compose import SIDES, LayerTimes, batches, build, memory_sizes, setup

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# The stacked-model check (kernels/layers/stack.py `time_stacked`): `stacked_figure` is the call
# site, the evidence field `stacked` holds its result; a switch so tests and a KB's own runs can
# leave it out (None while off).
RUN_STACKED = True
# check shapes: a few sequences, contexts that cross a block edge, the window plus some
CHECK_BATCH, CHECK_TOKENS, CHECK_SSD_TOKENS = 2, 45, 300
# A GPU holds its part's memory when it reports at least this share of the datasheet figure (an
# H100 80GB reports 85.0e9 bytes for "80 GB", an H200 150.1e9 for "141 GB": both above 0.9).
MEMORY_SHARE = 0.9


def _check_tokens(arch: Any, kind: str, phase: str, tokens: int) -> int:
    if phase == "prefill" and kind == "sliding_attention":
        return min(tokens, int(arch.config.sliding_window.value) + CHECK_TOKENS)
    if phase == "prefill" and kind == "mamba2":
        return min(tokens, CHECK_SSD_TOKENS)
    return min(tokens, CHECK_TOKENS)


def _builder(ctx: Context, phase: str) -> Any:
    module = ctx.load("layers", phase)
    return module.decode_layer if phase == "decode" else module.prefill_layer


def _run_once(built: Any) -> Any:
    fn, args = built
    return fn(*args)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


def _free() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _check(ctx: Context, table: Any, build_layer: Any, arch: Any, kind: str, name: str,
           small: tuple[int, int], where: str, reference: Any) -> Any:
    """Check implementation `name` against the layer's reference build at the small shape
    (built once per layer, returned for the next implementation); ExperimentError on a
    mismatch. KDA has no reference build: noted, timed unchecked."""
    if kind not in table.HAS_REFERENCE:
        ctx.notes.append(f"{where} [{name}]: no reference build of {kind}; timed unchecked")
        return reference
    if reference is None:
        reference = _run_once(build_layer(ctx, arch, kind, *small, impl="reference"))
    out = _run_once(build_layer(ctx, arch, kind, *small, impl=name))
    ctx.check(f"{where} [{name}] vs reference at B={small[0]} L={small[1]}", out, reference,
              tol=table.LAYER_TOLERANCE)
    return reference


def time_layer(ctx: Context, arch: Any, kind: str, phase: str, batch: int, tokens: int,
               declared: tuple[str, ...]) -> LayerTimes:
    """Every declared implementation of one layer: checked (in round 0), then timed. An
    implementation that cannot run here (a peer absent, a build that fails, out of memory) is
    `skipped`, a decode step that cannot be captured `refused`, both with the reason; a wrong
    result or a timing below the floor ends the experiment (ExperimentError)."""
    import torch

    table = ctx.load("layers", "impls")
    names = table.for_layer(phase, kind, declared)
    build_layer = _builder(ctx, phase)
    work = layer_work(arch, kind, phase, batch, tokens)
    floor_s = (ctx.ceilings.floor_ms(work.flops, work.bytes) / 1e3
               if ctx.ceilings is not None else None)
    where = f"{arch.id} {kind} {phase} " + (f"L={tokens} B={batch}" if phase == "decode"
                                           else f"B={batch} L={tokens}")
    small = (min(batch, CHECK_BATCH), _check_tokens(arch, kind, phase, tokens))
    reference = None
    timed: dict[str, Interval] = {}
    skipped: dict[str, str] = {}
    refused: dict[str, str] = {}
    with torch.no_grad():
        for name in names:
            sync = table.HOST_SYNC.get((phase, kind, name))
            if sync:
                refused[name] = f"not capturable in a CUDA graph: {sync}"
                continue
            built = None
            try:
                if ctx.round == 0:  # later rounds run the same code, seeds and check shape
                    reference = _check(ctx, table, build_layer, arch, kind, name, small, where,
                                       reference)
                built = build_layer(ctx, arch, kind, batch, tokens, impl=name)
                # ctx.time's too-fast refusal gets the bytes no cache can hold across calls
                # (FLOPs, caches, states, activations): one sublayer's weights, replayed
                # back to back, may sit in L2 (a fraction above 1 in the row says so)
                t = ctx.time(f"{where} [{name}]", built[0], [built[1]], flops=work.flops,
                             nbytes=work.bytes - work.parts["weights"],
                             decode=phase == "decode", batch=batch, steps=tokens,
                             implementation=name)
                timed[name] = Interval(t.median_ms / 1e3, t.p10_ms / 1e3, t.p90_ms / 1e3)
            except PeerUnavailable as exc:
                skipped[name] = f"not run: {_first_line(exc)}"
            except ExperimentError as exc:
                if type(exc.__cause__).__name__ != "CaptureRefused":
                    raise
                refused[name] = f"not capturable in a CUDA graph: {_first_line(exc.__cause__)}"
            except Exception as exc:  # out of memory, a compile failure: not a verdict
                skipped[name] = f"failed: {_first_line(exc)}"
            finally:
                del built
                _free()
    if not timed:
        why = "; ".join(f"{n}: {w}" for n, w in {**skipped, **refused}.items())
        if skipped and all(w.startswith("not run") for w in skipped.values()) and not refused:
            raise PeerUnavailable(f"{where}: no implementation could run ({why})")
        raise ExperimentError(f"{where}: no implementation was timed ({why or 'none declared'})")
    return LayerTimes(timed, skipped, floor_s, work.as_dict(), refused)


def stacked_figure(ctx: Context, arch: Any, phase: str, batch: int, tokens: int,
                   chosen: dict[str, str]) -> dict[str, Any] | None:
    """The stacked reduced-depth model of `arch` timed end to end with each layer's chosen
    implementation (kernels/layers/stack.py `time_stacked`); None while RUN_STACKED is off, the
    module is absent or the stack cannot run here (out of memory, a capture refused: noted, as
    the check is a statement beside the verdict, not the verdict)."""
    if not RUN_STACKED:
        return None
    try:
        stack = ctx.load("layers", "stack")
    except ImportError as exc:
        ctx.notes.append(f"no stacked-model figure: {_first_line(exc)}")
        return None
    base = _builder(ctx, phase)

    def builder(ctx: Any, arch: Any, kind: Any, b: int, t: int, seed: int = 0) -> Any:
        return base(ctx, arch, kind, b, t, seed=seed, impl=chosen[str(getattr(kind, "value",
                                                                              kind))])

    # one round inside each of verify's rounds (which already repeat the measurement)
    try:
        st = stack.time_stacked(ctx, arch, phase, batch, tokens, builder=builder, rounds=1)
    except Exception as exc:  # any failure of the check is stated, not raised
        ctx.notes.append(f"{arch.id}: no stacked-model figure ({phase} B={batch} L={tokens}): "
                         f"{_first_line(exc)}")
        _free()
        return None
    return {"phase": phase, "batch": batch, "tokens": tokens, "kinds": list(st.kinds),
            "stacked_ms": st.stacked_ms, "composed_ms": st.composed_ms, "glue_ms": st.glue_ms,
            "ratio": st.stacked_ms / st.composed_ms if st.composed_ms else None, "how": st.how}


def fit_readings(s: dict[str, Any], per_reading: dict[str, dict[str, int]],
                 sizes: dict[str, tuple[str, float | None]], gpu_bytes: int,
                 gpu_part: str | None) -> tuple[dict[str, dict[str, int]], str | None]:
    """The readings this GPU can hold, and a note on those left out. `sizes` (`memory_sizes`): what
    each memory-limited reading's batches are sized for, the declared `accelerator` (h200-sxm
    unless the declaration names another) or N GB. On a smaller GPU those batches are no
    deployment it could serve, and one layer's cache alone can outgrow it (Nemotron-H's attention
    KV at batch 110 and 66K context is 27.7 GiB: an H100 ran out of memory there). The judged
    reading left out is a refusal, said before anything is timed."""
    too_big = {name: what for name, (what, gb) in sizes.items()
               if gb and gb * 1e9 * MEMORY_SHARE > gpu_bytes}
    if not too_big:
        return per_reading, None
    here = f"{gpu_part or 'this GPU'} ({gpu_bytes / 1e9:.0f} GB)"
    if s["reading"] in too_big:
        raise ExperimentError(
            f"the {s['reading']} reading is sized for {too_big[s['reading']]} and cannot run on "
            f"{here}: run it on {s['accelerator']}, or on this GPU with a copy of the experiment "
            "whose point declares `accelerator:` as this GPU's part")
    kept = {name: sides for name, sides in per_reading.items() if name not in too_big}
    return kept, f"left out on {here}: " + ", ".join(
        f"the {name} reading (sized for {what})" for name, what in too_big.items())


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    """Time every declared implementation of each layer type of both architectures at the
    claim's shapes (GPU); compose the fastest correct one per layer."""
    if ctx.kb is None:
        raise ExperimentError("the serving experiments read architecture records: no KB")
    table = ctx.load("layers", "impls")
    s = setup(cond)
    per_reading = batches(s, ctx.kb)
    sizes = memory_sizes(s, ctx.kb)
    if sizes and ctx.device.type == "cuda":
        import torch

        per_reading, left_out = fit_readings(
            s, per_reading, sizes, torch.cuda.get_device_properties(ctx.device).total_memory,
            ctx.accelerator)
        if left_out:
            ctx.notes.append(left_out)
    times: dict[str, Any] = {}
    stacked: dict[str, Any] = {}
    for side, key in SIDES:
        arch = ctx.kb.architectures[s[key]]
        declared = tuple(getattr(ctx, "sides", {}).get(side) or table.WHAT)
        kinds = list(layer_counts(arch))
        per: dict[str, Any] = {"prefill": None, "decode": {}}
        if s["phase"] in ("prefill", "end_to_end"):
            per["prefill"] = {k: time_layer(ctx, arch, k, "prefill", s["batch"],
                                            s["prompt_length"], declared) for k in kinds}
        if s["phase"] != "prefill":
            for batch in sorted({sides[side] for sides in per_reading.values()}):
                per["decode"][batch] = {k: time_layer(ctx, arch, k, "decode", batch,
                                                      s["decode_context"], declared)
                                        for k in kinds}
        judged = per["decode"].get(per_reading[s["reading"]][side]) or per["prefill"]
        ctx.describe_impl(side, "fastest correct per layer: " + ", ".join(
            f"{k} {lt.chosen}" for k, lt in judged.items()) + " (every implementation's time "
            "in the sweep rows)")
        phase = "prefill" if s["phase"] == "prefill" else "decode"
        stacked[side] = stacked_figure(ctx, arch, phase, per_reading[s["reading"]][side],
                                       s["decode_context"],
                                       {k: lt.chosen for k, lt in judged.items()})
        times[side] = per
    m = build(s, times, ctx.kb, per_reading)
    m.data["stacked"] = stacked if any(stacked.values()) else None
    ctx.notes.append("composed from per-layer timings, each layer's fastest correct "
                     "implementation (norms, residuals, rotary, embeddings and the output head "
                     "left out of both models); " + ("stacked-model check in `stacked`"
                                                    if m.data["stacked"] else
                                                    "no stacked-model run"))
    return m

