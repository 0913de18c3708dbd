"""Model-level serving claims: each layer type timed at the claim's shapes, composed by the
architecture's pattern counts (`flopkb.architecture.serving`), read as model / baseline tokens/s.

The hook of the four serving declarations (`experiments/serving-*.yaml`); each declaration's
`point` gives the claim's conditions (the model and baseline architecture records, the phase,
lengths, batch and the reading the claim states) over `DEFAULTS` below. Phases:

- `prefill`: prefill tokens/s of `batch` prompts of `prompt_length`;
- `decode`: decode tokens/s in total at the batch, the step timed at `decode_context`;
- `end_to_end`: output tokens/s of `prompt_length` in / `output_tokens` out.

A generation of n tokens is timed at its mean context (`prompt + n/2`): per-step time is linear in
the context (attention reads L keys; everything else is constant), so n steps at the mean context
take the sum of the n steps' times. Readings: `equal_batch` (both at `batch`) and, where
`memory_limited` is asked for, each model at the largest batch its KV cache and state allow on
`accelerator` (`flopkb.architecture.cost`, at most `max_batch`), and where the declaration names
`control_memory_gb`, the same rule on that much memory (`memory_limited_80gb`: an H100's 80 GB for a
claim published there). The verdict reads `reading`; the others are reported beside it, and the
declaration's `reading_why` (which reading of the source's conditions is judged, and why) is
stated in the verdict.

Never run on a GPU yet: `measure` and `_serving_layers` are untested there; `judge` and the
composition are tested with fake timings (tests/unit/verify/test_serving.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flopkb.architecture.serving import (
    compose,
    interval_of,
    layer_counts,
    memory_limited_batch,
    reading,
)
from flopkb.architecture.show import hardware_values
from flopkb.evidence.measurement import Judgement, Measurement, judge_ratio, size_of
from flopkb.evidence.stats import Interval
from flopkb.hardware.model import HardwareModel
from flopkb.model import LayerType
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.verify.context import Context

READINGS = ("equal_batch", "memory_limited")
# what every serving declaration shares; its `point` names the rest (flopkb.verify.runner)
DEFAULTS: dict[str, Any] = {
    "batch": 1, "reading": "equal_batch", "accelerator": "h200-sxm", "max_batch": 64,
    "control_memory_gb": None, "reading_why": "",
}


def setup(cond: dict[str, Any]) -> dict[str, Any]:
    """The conditions as numbers: sizes like '128K' read (K = 1024), the phase checked."""
    s = dict(cond)
    if "input_tokens" in s:  # the end-to-end claims' name for the prompt length
        s["prompt_length"] = s["input_tokens"]
    for key in ("prompt_length", "batch", "output_tokens", "generated_tokens", "max_batch",
                "context_length", "control_memory_gb"):
        if s.get(key) is not None:
            s[key] = size_of(s[key])
    if s["phase"] not in ("prefill", "decode", "end_to_end"):
        raise ExperimentError(f"unknown phase {s['phase']!r}")
    if s["reading"] not in READINGS:
        raise ExperimentError(f"unknown reading {s['reading']!r}; expected one of {READINGS}")
    if s["phase"] == "decode":
        if s.get("generated_tokens"):
            # a generation of n tokens after a short prompt, timed at its mean context
            s["decode_context"] = max(1, s.get("prompt_length", 0) + s["generated_tokens"] // 2)
        else:
            s["decode_context"] = s["context_length"]
    elif s["phase"] == "end_to_end":
        s["decode_context"] = s["prompt_length"] + s["output_tokens"] // 2
    else:
        s["decode_context"] = s["prompt_length"]
    return s


def batches(s: dict[str, Any], kb: Any) -> dict[str, dict[str, int]]:
    """reading -> side -> batch."""
    out = {"equal_batch": {"model": s["batch"], "baseline": s["batch"]}}
    if s["reading"] == "memory_limited" or s.get("also_memory_limited"):
        hw = hardware_values(HardwareModel(kb), s["accelerator"], "bf16")
        out["memory_limited"] = _largest_batches(s, kb, hw)
        if s.get("control_memory_gb"):
            capped = {**hw, "memory_capacity": float(s["control_memory_gb"])}
            out[f"memory_limited_{s['control_memory_gb']:g}gb"] = _largest_batches(s, kb, capped)
    return out


def _largest_batches(s: dict[str, Any], kb: Any, hw: Any) -> dict[str, int]:
    return {side: memory_limited_batch(kb.architectures[s[key]], s["decode_context"],
                                       s["accelerator"], hw, s["max_batch"])
            for side, key in (("model", "model"), ("baseline", "baseline_architecture"))}


def build(s: dict[str, Any], times: dict[str, Any], kb: Any,
          per_reading: dict[str, dict[str, int]]) -> Measurement:
    """The Measurement from per-layer times: times[side]['prefill'] {type: Interval} or None,
    times[side]['decode'][batch] {type: Interval}. Pure: tests drive it with fake times."""
    readings: dict[str, Any] = {}
    composed: dict[str, Any] = {}
    for name, sides in per_reading.items():
        both = {}
        for side, key in (("model", "model"), ("baseline", "baseline_architecture")):
            arch = kb.architectures[s[key]]
            t = times[side]
            c = compose(arch.id, layer_counts(arch), t["prefill"],
                        t["decode"][sides[side]] if s["phase"] != "prefill" else t["prefill"],
                        prompt_length=max(1, s.get("prompt_length") or 1),
                        decode_context=s["decode_context"], decode_batch=sides[side],
                        prefill_batch=s["batch"])
            both[side] = c
            composed[f"{name}/{side}"] = c.as_dict()
        readings[name] = reading(name, s["phase"], both["model"], both["baseline"],
                                 s.get("output_tokens")).as_dict()
    rows = [{"side": side, "phase": phase, "layer_type": t, **(
                {"batch": batch} if batch else {}), "ms": iv.value * 1e3,
             "ms_low": iv.low * 1e3, "ms_high": iv.high * 1e3}
            for side, per in times.items()
            for phase, batch, table in _tables(per)
            for t, iv in table.items()]
    data = {"setup": {k: v for k, v in s.items() if isinstance(v, (int, float, str))},
            "readings": readings, "claim_reading": s["reading"], "composed": composed}
    return Measurement(data, rows, dict(s))


def _tables(per: dict[str, Any]) -> list[tuple[str, int | None, dict[str, Interval]]]:
    out: list[tuple[str, int | None, dict[str, Interval]]] = []
    if per.get("prefill"):
        out.append(("prefill", None, per["prefill"]))
    for batch, table in (per.get("decode") or {}).items():
        out.append(("decode", batch, table))
    return out


def cpu_check(ctx: Context) -> None:
    """The decode steps and the windowed prefill attention against their references, odd
    sizes, through the Triton interpreter."""
    import torch

    m1, m2 = ctx.load("selective_scan", "step"), ctx.load("ssd", "step")
    m1_ref, m2_ref = ctx.load("selective_scan", "reference"), ctx.load("ssd", "reference")
    att, att_ref = ctx.load("attention", "step"), ctx.load("attention", "reference")
    g = torch.Generator().manual_seed(0)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    b, dim, n = 3, 37, 5
    a1 = dict(x=rnd(b, dim).bfloat16(), dt=rnd(b, dim).bfloat16(), A=-rnd(dim, n).abs() - 0.1,
              Bm=rnd(b, n).bfloat16(), Cm=rnd(b, n).bfloat16(), D=rnd(dim), dt_bias=rnd(dim))
    state = rnd(b, dim, n)
    s_k, s_r = state.clone(), state.clone()
    ctx.check("selective_scan.step.mamba1_step", m1.mamba1_step(s_k, **a1),
              m1_ref.mamba1_step_reference(s_r, **a1))
    ctx.check("selective_scan.step.mamba1_step[state]", s_k, s_r, tol=1e-5)
    h, p, grp = 6, 7, 3
    a2 = dict(x=rnd(b, h, p).bfloat16(), dt=rnd(b, h).bfloat16(), A=-rnd(h).abs() - 0.1,
              Bm=rnd(b, grp, n).bfloat16(), Cm=rnd(b, grp, n).bfloat16(), D=rnd(h),
              dt_bias=rnd(h))
    state = rnd(b, h, p, n)
    s_k, s_r = state.clone(), state.clone()
    ctx.check("ssd.step.mamba2_step", m2.mamba2_step(s_k, **a2),
              m2_ref.mamba2_step_reference(s_r, **a2))
    ctx.check("ssd.step.mamba2_step[state]", s_k, s_r, tol=1e-5)
    q, kc, vc = rnd(2, 6, 16), rnd(2, 19, 2, 16), rnd(2, 19, 2, 16)
    ctx.check("attention.step.decode_attention[math]",
              att.decode_attention(q, kc, vc, backend="math"),
              att_ref.decode_attention_reference(q, kc, vc))
    q, kc, vc = rnd(1, 23, 4, 8), rnd(1, 23, 2, 8), rnd(1, 23, 2, 8)
    ctx.check("attention.window_sdpa.windowed_attention[math]",
              ctx.load("attention", "window_sdpa").windowed_attention(q, kc, vc, 5, backend="math"),
              att_ref.windowed_attention_reference(q, kc, vc, 5))


def _timed(ctx: Context, label: str, built: Any, nbytes: float = 0.0, decode: bool = False,
           **point: Any) -> Interval:
    fn, args = built
    t = ctx.time(label, fn, [args], nbytes=nbytes, decode=decode, **point)
    return Interval(t.median_ms / 1e3, t.p10_ms / 1e3, t.p90_ms / 1e3)


def measure(ctx: Context, cond: dict[str, Any]) -> Measurement:
    """Time one sublayer of each type of both architectures at the claim's shapes (GPU)."""
    import torch

    prefill, decode = ctx.load("layers", "prefill"), ctx.load("layers", "decode")
    if ctx.kb is None:
        raise ExperimentError("the serving experiments read architecture records: no KB")
    s = setup(cond)
    per_reading = batches(s, ctx.kb)
    times: dict[str, Any] = {}
    for side, key in (("model", "model"), ("baseline", "baseline_architecture")):
        arch = ctx.kb.architectures[s[key]]
        kinds = [LayerType(t) for t in layer_counts(arch)]
        per: dict[str, Any] = {"prefill": None, "decode": {}}
        with torch.no_grad():
            if s["phase"] in ("prefill", "end_to_end"):
                per["prefill"] = {
                    k.value: _timed(ctx, f"{arch.id} {k.value} prefill L={s['prompt_length']}",
                                    prefill.prefill_layer(ctx, arch, k, s["batch"],
                                                         s["prompt_length"]),
                                    batch=s["batch"], steps=s["prompt_length"])
                    for k in kinds}
                torch.cuda.empty_cache()
            if s["phase"] != "prefill":
                for batch in sorted({sides[side] for sides in per_reading.values()}):
                    per["decode"][batch] = {
                        k.value: _timed(ctx, f"{arch.id} {k.value} decode "
                                        f"L={s['decode_context']} B={batch}",
                                        decode.decode_layer(ctx, arch, k, batch,
                                                            s["decode_context"]),
                                        nbytes=decode.decode_floor_bytes(
                                            ctx, arch, k, batch, s["decode_context"]),
                                        decode=True, batch=batch, steps=s["decode_context"])
                        for k in kinds}
                    torch.cuda.empty_cache()
        times[side] = per
    ctx.notes.append("composed from per-layer timings (norms, residuals, rotary, embeddings "
                     "and the output head left out of both models); no stacked-model run")
    return build(s, times, ctx.kb, per_reading)


def judge(m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
    readings = m.data["readings"]
    name = m.data["claim_reading"]
    if name not in readings:
        raise ExperimentError(f"the measurement has no {name!r} reading")
    r = readings[name]
    others = "; ".join(f"{o['name']}: {o['ratio']['value']:.3g}x ({o['what']})"
                       for n, o in readings.items() if n != name)
    what = f"{name} reading, model / baseline {r['what']}" + (f" [also {others}]" if others
                                                               else "")
    if cond.get("reading_why"):
        what += f"; judged: {cond['reading_why']}"
    return judge_ratio(interval_of(r["ratio"]), mag, what=what,
                       qualitative="qualitative: the model is faster — ratio above 1.05")
