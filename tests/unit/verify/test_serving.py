"""The serving experiments' judge and composition with fake per-layer timings (no GPU): the
claim's conditions reach the setup, the composed ratio is read against the magnitude, and Kimi's
claim is judged at the memory-limited batch with the equal-batch reading beside it."""

from __future__ import annotations

import pytest
import torch

from flopkb.architecture.serving import layer_counts
from flopkb.evidence import catalogue, hooks
from flopkb.evidence.measurement import Measurement, resolve
from flopkb.evidence.stats import Interval
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.kernelpkg import load_op
from flopkb.paths import bundled_root
from flopkb.verify.context import Context
from flopkb.verify.experiments import serving
from tools import replot_evidence as replot

# the timed sublayers (kernels/layers/): shared builders, prefill, decode
build, prefill, decode = (load_op("layers", name) for name in ("_build", "prefill", "decode"))
# the four declarations share the hook `serving`; each one's `point` gives its claim's conditions
HOOKS = ("serving-samba-prompt", "serving-samba-generation", "serving-nemotron-h",
         "serving-kimi-decode")


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def hook(name: str):
    """What verify runs for the declared experiment `name` (its DEFAULTS: the hook's, completed
    by the declaration's point)."""
    return hooks.experiment_module(catalogue.for_kb(bundled_root()).get(name), bundled_root())


def judge(m: Measurement, mag, cond: dict):
    """The serving judge as verify and validate call it: handed a serving declaration (the four
    state one qualitative criterion)."""
    return hook("serving-samba-prompt").judge(m, mag, cond)


def claim_conditions(kb: KnowledgeBase, cls: str, cid: str) -> dict:
    row = next(r for r in kb.classes[cls].flop.hardware_parameters if r.id == cid)
    return dict(row.conditions or {})


def fake_times(kb: KnowledgeBase, s: dict, per_reading: dict, speed: dict[str, float]) -> dict:
    """Per-layer times: `speed[type]` seconds per sublayer (x batch for decode), +-10 %."""
    def iv(t: float) -> Interval:
        return Interval(t, 0.9 * t, 1.1 * t)

    out = {}
    for side, key in (("model", "model"), ("baseline", "baseline_architecture")):
        counts = layer_counts(kb.architectures[s[key]])
        decode = {b: {t: iv(speed[t] * b) for t in counts}
                  for b in {sides[side] for sides in per_reading.values()}}
        out[side] = {"prefill": {t: iv(speed[t]) for t in counts}, "decode": decode}
    return out


def time_each_once(ctx: Context, monkeypatch, *, p10_ms: float, p90_ms: float) -> list[str]:
    """A stand-in for `ctx.time`: each timed call runs once (so a crash still shows) and takes
    1 ms, its band p10_ms to p90_ms; the list returned fills with the labels timed, in order."""
    from types import SimpleNamespace

    labels: list[str] = []

    def fake_time(label, fn, arg_sets, **_):
        fn(*arg_sets[0])
        labels.append(label)
        return SimpleNamespace(median_ms=1.0, p10_ms=p10_ms, p90_ms=p90_ms)

    monkeypatch.setattr(ctx, "time", fake_time)
    return labels


def test_claim_conditions_reach_the_setup(kb: KnowledgeBase) -> None:
    cond, notes = resolve(hook("serving-samba-prompt").DEFAULTS,
                          claim_conditions(kb, "samba", "prompt-throughput"))
    assert notes == []
    s = serving.setup(cond)
    assert (s["prompt_length"], s["batch"], s["phase"]) == (131072, 1, "prefill")
    cond, notes = resolve(hook("serving-samba-generation").DEFAULTS,
                          claim_conditions(kb, "samba", "generation-speedup"))
    assert notes == [] and serving.setup(cond)["decode_context"] == 32768
    cond, notes = resolve(hook("serving-nemotron-h").DEFAULTS,
                          claim_conditions(kb, "nemotron-h", "faster-inference"))
    assert notes == [] and cond["source_hardware"] == "H100"
    assert cond["source_engine"].startswith("Megatron-LM") and cond["reading"] == "memory_limited"
    assert serving.setup(cond)["decode_context"] == 65536 + 512
    cond, notes = resolve(hook("serving-kimi-decode").DEFAULTS,
                          claim_conditions(kb, "kimi-linear", "decoding-throughput"))
    assert notes == [] and serving.setup(cond)["decode_context"] == 2**20
    assert cond["reading"] == "memory_limited" and "theoretical" in cond["reading_why"]
    # the report's batch-1 figure reads the same declaration at equal batch (row conditions)
    cond, notes = resolve(hook("serving-kimi-decode").DEFAULTS,
                          claim_conditions(kb, "kimi-linear", "decoding-tpot-batch1"))
    assert notes == [] and (cond["reading"], cond["batch"]) == ("equal_batch", 1)
    assert "Figure 7(b)" in cond["reading_why"]


def test_nemotron_reads_the_largest_batch_with_an_80_gb_control(kb: KnowledgeBase) -> None:
    cond, _ = resolve(hook("serving-nemotron-h").DEFAULTS,
                      claim_conditions(kb, "nemotron-h", "faster-inference"))
    s = serving.setup(cond)
    per = serving.batches(s, kb)
    own, capped = per["memory_limited"], per["memory_limited_80gb"]
    # the hybrid's small cache buys it the larger batch, and less memory buys both less
    assert own["model"] > own["baseline"] and capped["model"] > capped["baseline"]
    assert capped["model"] < own["model"] and capped["baseline"] < own["baseline"]
    speed = {"mamba2": 0.01, "attention": 0.02, "mlp": 0.01}
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    j = judge(m, parse_magnitude("up to 3x"), m.conditions)
    assert j.what.startswith("memory_limited reading") and "memory_limited_80gb" in j.what
    assert "judged: the paper's rule" in j.what
    # a qualitative reading states the declarations' criterion, as verify always stated it
    j = judge(m, parse_magnitude("qualitative"), m.conditions)
    assert j.criterion == "qualitative: the model is faster — ratio above 1.05"


def test_prefill_claim_confirmed_and_refuted_by_the_composed_ratio(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    # Samba: 12 mamba1 + 12 SWA + 24 MLP; Llama-3 1.6B: 24 attention + 24 MLP (seconds each)
    speed = {"mamba1": 0.01, "sliding_attention": 0.01, "mlp": 0.01, "attention": 0.2}
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    ratio = (24 * 0.2 + 24 * 0.01) / (12 * 0.01 + 12 * 0.01 + 24 * 0.01)  # = 10.5
    r = m.data["readings"]["equal_batch"]["ratio"]
    assert r["value"] == pytest.approx(ratio)
    assert r["low"] == pytest.approx(ratio * 0.9 / 1.1)
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert j.verdict == "refuted" and j.measured.value == pytest.approx(ratio)
    speed["attention"] = (3.73 * 0.48 - 0.24) / 24  # a 3.73x composed ratio exactly
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    assert judge(m, parse_magnitude("3.73x"), m.conditions).verdict == "inconclusive"
    narrow = {side: {"prefill": {t: Interval(v.value, v.value, v.value)
                                 for t, v in times["prefill"].items()}, "decode": {}}
              for side, times in fake_times(kb, s, per, speed).items()}
    m = serving.build(s, narrow, kb, per)
    assert judge(m, parse_magnitude("3.73x"), m.conditions).verdict == "confirmed"


def test_kimi_is_judged_at_the_memory_limited_batch(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-kimi-decode").DEFAULTS))
    per = serving.batches(s, kb)
    assert per["equal_batch"] == {"model": 1, "baseline": 1}
    assert per["memory_limited"]["model"] > per["memory_limited"]["baseline"]
    speed = {"kda": 1e-4, "mla": 1e-3, "mlp": 1e-4, "moe": 1e-4}
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    eq = m.data["readings"]["equal_batch"]["ratio"]["value"]
    # fake decode time grows linearly with the batch, so total tokens/s does not: the ratio
    # is the same at both readings here, and judge still reads the memory-limited one
    ml = m.data["readings"]["memory_limited"]["ratio"]["value"]
    assert ml == pytest.approx(eq)
    # a step time that does not grow with the batch (memory-bound weights): the larger batch
    # the smaller cache allows multiplies Kimi's total tokens/s
    flat = fake_times(kb, s, per, speed)
    for side in flat.values():
        side["decode"] = {b: side["decode"][1] for b in side["decode"]}
    m = serving.build(s, flat, kb, per)
    ml = m.data["readings"]["memory_limited"]["ratio"]["value"]
    b_k, b_m = per["memory_limited"]["model"], per["memory_limited"]["baseline"]
    assert ml == pytest.approx(eq * b_k / b_m)
    j = judge(m, parse_magnitude("up to 6x"), m.conditions)
    assert j.measured.value == pytest.approx(ml)
    assert "memory_limited reading" in j.what and "equal_batch" in j.what


def test_end_to_end_reading_adds_prefill_and_decode(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-nemotron-h").DEFAULTS))
    per = serving.batches(s, kb)
    speed = {"mamba2": 0.01, "attention": 0.02, "mlp": 0.01}
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    pre_m, dec_m = 24 * 0.01 + 4 * 0.02 + 24 * 0.01, 24 * 0.01 + 4 * 0.02 + 24 * 0.01
    pre_b, dec_b = 32 * 0.02 + 32 * 0.01, 32 * 0.02 + 32 * 0.01
    want = (1024 / (pre_m + 1024 * dec_m)) / (1024 / (pre_b + 1024 * dec_b))
    assert m.data["readings"]["equal_batch"]["ratio"]["value"] == pytest.approx(want)


def test_a_missing_reading_is_an_error_not_a_verdict(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    m = serving.build(s, fake_times(kb, s, per, {"mamba1": 1.0, "sliding_attention": 1.0,
                                                 "mlp": 1.0, "attention": 1.0}), kb, per)
    m.data["claim_reading"] = "memory_limited"
    with pytest.raises(Exception, match="no 'memory_limited' reading"):
        judge(m, parse_magnitude("3.73x"), m.conditions)


def test_cpu_check_runs_every_kernel_against_its_reference(monkeypatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    ctx = Context(gpu=False)
    ctx.begin(60)
    serving.cpu_check(ctx)
    assert len(ctx.checks) == 10 and all(c["ok"] for c in ctx.checks)


def tiny(arch, **sizes: int):
    """`arch` with its sizes shrunk (the layer code runs on the CPU in seconds)."""
    from flopkb.model.architecture import SourcedSize

    config = arch.config.model_copy(update={k: SourcedSize(value=v) for k, v in sizes.items()})
    return arch.model_copy(update={"config": config})


TINY = {
    "samba-1-7b": dict(d_model=32, attention_heads=4, kv_heads=2, sliding_window=8, mlp_size=24,
                       ssm_state_size=5, ssm_dt_rank=3),
    "nemotron-h-8b": dict(d_model=32, attention_heads=4, kv_heads=2, head_dim=8, mlp_size=24,
                          ssm_heads=4, ssm_head_dim=8, ssm_state_size=5, ssm_groups=2),
    "kimi-mla-48b-a3b-baseline": dict(d_model=32, attention_heads=4, kv_lora_rank=16,
                                      qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                                      q_lora_rank=12, experts=6, experts_per_token=2,
                                      expert_mlp_size=8, mlp_size=24),
}


@pytest.mark.parametrize("aid", list(TINY))
def test_every_layer_builds_and_runs_at_tiny_sizes_on_the_cpu(kb, aid, monkeypatch) -> None:
    # the GPU path's layer code, run once through the interpreter with SDPA's math backend: no
    # timing, shapes and dtypes only (sizes and caches far below the claims')
    from flopkb.model import LayerType

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(build, "BACKEND", {"flash": "math", "masked": "math"})
    arch = tiny(kb.architectures[aid], **TINY[aid])
    ctx = Context(gpu=False)
    for kind in layer_counts(arch):
        k = LayerType(kind)
        fn, args = prefill.prefill_layer(ctx, arch, k, 2, 19)
        with torch.no_grad():
            out = fn(*args)
        assert out.shape == (2 * 19, 32) and torch.isfinite(out.float()).all(), kind
        fn, args = decode.decode_layer(ctx, arch, k, 3, 11)
        with torch.no_grad():
            out = fn(*args)
        assert out.shape == (3, 32) and torch.isfinite(out.float()).all(), kind


def test_kda_without_fla_is_not_run_with_the_reason(kb: KnowledgeBase, monkeypatch) -> None:
    from flopkb.model import LayerType
    from flopkb.verify.context import PeerUnavailable

    monkeypatch.setitem(__import__("sys").modules, "fla", None)  # as if not installed
    arch = kb.architectures["kimi-linear-48b-a3b"]
    with pytest.raises(PeerUnavailable, match="fla"):
        decode.decode_layer(Context(gpu=False), arch, LayerType.kda, 1, 8)


def test_decode_floor_bytes_are_the_state_and_cache_the_kernels_read(kb) -> None:
    from flopkb.model import LayerType

    ctx = Context(gpu=False)
    nemo = kb.architectures["nemotron-h-8b"]
    state = 2 * 4 * 128 * 64 * 128  # H x P x N fp32, read and written
    got = decode.decode_floor_bytes(ctx, nemo, LayerType.mamba2, 1, 4096)
    assert state < got < 1.01 * state
    # 8 KV heads x 128 x 2 (K, V) x 2 bytes per cached token, plus q and o
    att = decode.decode_floor_bytes(ctx, nemo, LayerType.attention, 2, 1000)
    assert att == 2 * 2 * 1000 * 8 * 128 * 2 + 2 * 2 * 32 * 128 * 2
    samba = kb.architectures["samba-1-7b"]
    capped = decode.decode_floor_bytes(ctx, samba, LayerType.sliding_attention, 1, 65536)
    assert capped == decode.decode_floor_bytes(ctx, samba, LayerType.sliding_attention, 1, 2048)


def test_measure_runs_end_to_end_on_the_cpu_with_a_stand_in_timer(kb, monkeypatch) -> None:
    # the GPU path with the timer replaced (each layer run once, 1 ms per sublayer): measure ->
    # build -> judge on tiny copies of Nemotron-H 8B and Llama-3.1 8B
    from types import SimpleNamespace

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(build, "BACKEND", {"flash": "math", "masked": "math"})
    archs = {"nemotron-h-8b": tiny(kb.architectures["nemotron-h-8b"], **TINY["nemotron-h-8b"]),
             "llama-3-1-8b": tiny(kb.architectures["llama-3-1-8b"], d_model=32,
                                  attention_heads=4, kv_heads=2, head_dim=8, mlp_size=24)}
    ctx = Context(gpu=False, kb=SimpleNamespace(architectures=archs))
    ran = time_each_once(ctx, monkeypatch, p10_ms=0.9, p90_ms=1.1)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    # at equal batch: the stand-in KB has no accelerator records to size a memory-limited batch
    cond = {**hook("serving-nemotron-h").DEFAULTS, "input_tokens": 19, "output_tokens": 6,
            "reading": "equal_batch", "control_memory_gb": None}
    m = serving.measure(ctx, cond)
    # every declared implementation of each layer type, prefill and decode: Nemotron-H's
    # attention (bundled, sdpa), Mamba-2 (prefill bundled; decode bundled and torch, mamba_ssm
    # absent here), MLP (bundled, cublas); Llama's attention and MLP, two each
    assert len([x for x in ran if " stacked " not in x]) == 19
    assert all(c["ok"] for c in ctx.checks) and len(ctx.checks) == 19
    # then each side's stack at the judged decode step: the whole stack, each layer alone and
    # the glue, one round (Nemotron-H's M-M* period: 4 layers; Llama's *- x 4: 8)
    assert len([x for x in ran if " stacked " in x]) == (1 + 4 + 1) + (1 + 8 + 1)
    assert m.data["stacked"]["model"]["kinds"] == ["mamba2", "mlp", "mamba2", "attention"]
    assert m.data["stacked"]["baseline"]["ratio"] == pytest.approx(1 / 8)
    step = next(r for r in m.sweep if r["side"] == "model" and r["phase"] == "decode"
                and r["layer_type"] == "mamba2")
    assert set(step["implementations"]) == {"bundled", "torch"}
    assert step["skipped"]["mamba_ssm"].startswith("not run: PeerUnavailable")
    # every sublayer takes 1 ms: 52 sublayers against 64, prefill and 6 steps alike
    r = m.data["readings"]["equal_batch"]["ratio"]["value"]
    assert r == pytest.approx(64 / 52)
    assert judge(m, parse_magnitude("up to 3x"), m.conditions).measured.value == r
    # the picture every GPU run draws per claim: the judged rows' bars (prefill and the decode
    # step at batch 1, both sides) and the composed ratio of the one reading
    assert m.plot is not None and m.plot["kind"] == "bars" and m.plot["x"] == "label"
    assert len(m.plot["filter"]["label"]) == len(m.sweep) == 6 + 4
    assert all(r["label"] in m.plot["filter"]["label"] for r in m.sweep)
    [point] = m.plot["measure_rows"]
    assert point["ratio"] == pytest.approx(64 / 52) and point["reading"].endswith("(judged)")
    _draws(m)


def _draws(m) -> None:
    """The measurement's picture draws (matplotlib, where installed), its header the claim."""
    plt = pytest.importorskip("matplotlib.pyplot")
    from flopkb.verify import plots

    view = plots.ClaimView(claim="nemotron-h/faster-inference", experiment="serving-nemotron-h",
                           gpu="G", accelerator=None, verdict="confirmed",
                           expected={"text": "up to 3x", "kind": "ratio", "low": None,
                                     "high": 3.0, "unit": "x", "condition": {}})
    fig = plots.figure(m.plot, m.sweep, view)
    try:
        bars, ratio = fig.axes[:2]
        assert len(bars.get_xticklabels()) == len(m.plot["filter"]["label"])
        # the floors, where the run had ceilings to compute them from (not the CPU stand-in)
        floors = any("floor_ms" in r for r in m.sweep)
        assert ("the layer's floor" in bars.get_legend_handles_labels()[1]) == floors
        assert "claimed up to 3x" in ratio.get_legend_handles_labels()[1]
    finally:
        plt.close(fig)


def test_the_picture_shows_the_judged_reading_batches_of_each_side(kb: KnowledgeBase) -> None:
    # Kimi at the memory-limited reading: the model's decode rows at its own largest batch, the
    # baseline's at its own; the model's batch-1 rows (the equal-batch reading) are left out
    s = serving.setup(dict(hook("serving-kimi-decode").DEFAULTS))
    per = serving.batches(s, kb)
    speed = {"kda": 1e-4, "mla": 1e-2, "mlp": 1e-4, "moe": 1e-4}
    times = fake_times(kb, s, per, speed)
    for side in times.values():  # each layer at twice its floor
        side["decode"] = {b: {t: serving.LayerTimes({"bundled": iv}, floor_s=iv.value / 2)
                              for t, iv in table.items()} for b, table in side["decode"].items()}
    m = serving.build(s, times, kb, per)
    kept = [r for r in m.sweep if r["label"] in m.plot["filter"]["label"]]
    assert all(r["floor_fraction"] == pytest.approx(0.5) for r in kept)
    batch = per["memory_limited"]
    assert {(r["side"], r["batch"]) for r in kept} == {("model", batch["model"]),
                                                      ("baseline", batch["baseline"])}
    assert len({r["label"] for r in m.sweep}) == len(m.sweep)  # a label names one row
    assert "model \u00b7 mla \u00d77 \u00b7 decode B=" in kept[1]["label"]
    # the record keeps every string on one line (a line break in a label is FKB118); the
    # picture breaks them at LABEL_BREAK when it draws
    assert _one_line_strings(m.sweep) and _one_line_strings(m.plot)
    names = [p["reading"] for p in m.plot["measure_rows"]]
    assert names[0].startswith("equal_batch") and names[1].endswith("(judged)")
    assert m.plot["measure_rows"][1]["refused_above"] == pytest.approx(
        1.1 * m.data["roofline"]["memory_limited"])
    # a step timed 100x apart across layer types reads on a log axis
    assert m.plot["logy"]
    _draws(m)


def _one_line_strings(value: object) -> bool:
    if isinstance(value, str):
        return value.isprintable()
    if isinstance(value, dict):
        return all(_one_line_strings(k) and _one_line_strings(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_one_line_strings(v) for v in value)
    return True


def test_the_picture_shows_the_merged_rounds_not_the_first(kb: KnowledgeBase) -> None:
    # verify merges the rounds (medians, bands widened) and judges that: the picture's composed
    # ratios are described again from the merged measurement (execute.merged_entry)
    from flopkb.verify.execute import merged_entry

    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    entries = []
    for attention in (0.1, 0.2, 0.3):
        speed = {"mamba1": 0.01, "sliding_attention": 0.01, "mlp": 0.01, "attention": attention}
        m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
        entries.append({"m": m, "notes": [], "checks": [], "duration": 1.0, "error": None,
                        "unavailable": None})
    merged = merged_entry(entries, dict(s), serving.plot_spec)["m"]
    [point] = merged.plot["measure_rows"]
    ratio = merged.data["readings"]["equal_batch"]["ratio"]
    assert (point["ratio"], point["ratio_low"], point["ratio_high"]) == \
        (ratio["value"], ratio["low"], ratio["high"])
    assert point["ratio"] != entries[0]["m"].plot["measure_rows"][0]["ratio"]


def test_a_committed_serving_record_is_drawn_by_replot(tmp_path) -> None:
    # the committed serving evidence stored no plot: replot builds it with the experiment's own
    # function from the record's data and sweep
    from flopkb.kb import load_files
    from flopkb.verify.experiments.serving import picture

    pytest.importorskip("matplotlib")
    root = bundled_root()
    path = root / "records/evidence/ev-samba--prompt-throughput-h200-sxm-20261204t182102z.yaml"
    kb, _ = load_files([path])
    [ev] = kb.evidence.values()
    assert ev.statistics["plot"] is None
    assert replot.spec_of(ev) == picture.plot_spec(ev.statistics["data"], ev.sweep)
    assert [r["label"] for r in replot.rows_of(ev)] == replot.spec_of(ev)["filter"]["label"]
    [written] = replot.replot([path], tmp_path)
    assert written == tmp_path / f"{ev.id}.png" and written.read_bytes()[:4] == b"\x89PNG"


# ----- floors, the floor rule, the roofline-ratio refusal -----

def test_floors_by_hand_one_layer_per_type(kb: KnowledgeBase) -> None:
    from flopkb.architecture.layer_floor import layer_work

    nemo, kimi = kb.architectures["nemotron-h-8b"], kb.architectures["kimi-linear-48b-a3b"]
    samba = kb.architectures["samba-1-7b"]
    # Nemotron-H's relu^2 MLP: two matrices, not three
    w = layer_work(nemo, "mlp", "decode", 1, 4096)
    assert w.parts["weights"] == 2 * 4096 * 21504 * 2
    assert w.bytes == 2 * 4096 * 21504 * 2 + 2 * 4096 * 2
    assert w.flops == 2 * 2 * 4096 * 21504
    p = 4096 * 32 * 128 + 2 * 4096 * 8 * 128 + 32 * 128 * 4096
    w = layer_work(nemo, "attention", "decode", 2, 1000)
    assert w.parts == {"weights": 2 * p, "kv": 2 * 1000 * 2 * 8 * 128 * 2, "state": 0.0,
                       "activations": 2 * 2 * 4096 * 2}
    assert w.flops == 2 * (2 * p + 4 * 32 * 128 * 1000)
    # Mamba-2 step: the fp32 state read and written, the conv state (H P + 2 G N channels x 3)
    w = layer_work(nemo, "mamba2", "decode", 1, 65536)
    assert w.parts["state"] == 2 * (128 * 64 * 128 * 4 + (8192 + 2 * 8 * 128) * 3 * 2)
    assert w.parts["kv"] == 0
    # MLA: the 576-element latent per cached token, once for all heads
    w = layer_work(kimi, "mla", "decode", 1, 2**20)
    assert w.parts["kv"] == 2**20 * (512 + 64) * 2
    # MoE at one token: the router, the shared expert and the 8 routed ones it reaches
    w = layer_work(kimi, "moe", "decode", 1, 2**20)
    assert w.parts["weights"] == pytest.approx((2304 * 256 + 9 * 3 * 2304 * 1024) * 2)
    # KDA: the 32 heads' 128 x 128 fp32 state, read and written
    assert layer_work(kimi, "kda", "decode", 3, 100).parts["state"] == 2 * 3 * 32 * 128 * 128 * 4
    # prefill: the window caps the keys (2048 of Samba's 128K)
    w = layer_work(samba, "sliding_attention", "prefill", 1, 131072)
    keys = (2048 * 2049 / 2 + (131072 - 2048) * 2048) / 131072
    d, h, g, e = 2048, 32, 4, 64
    p = d * h * e + 2 * d * g * e + h * e * d
    assert w.flops == pytest.approx(131072 * (2 * p + 4 * h * e * keys))


def _layers(times: dict, floors: dict[str, float], skipped: dict[str, dict] | None = None
            ) -> dict:
    """Fake times as LayerTimes with a floor (seconds) per layer type."""
    out = {}
    for side, per in times.items():
        def wrap(table: dict) -> dict:
            return {t: serving.LayerTimes({"bundled": iv}, dict((skipped or {}).get(t, {})),
                                          floors[t]) for t, iv in table.items()}
        out[side] = {"prefill": wrap(per["prefill"]),
                     "decode": {b: wrap(tb) for b, tb in per["decode"].items()}}
    return out


def test_the_floor_rule_flips_a_verdict(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    assert s["floor_fraction"] == 0.33  # the declaration's, reaching the conditions
    per = serving.batches(s, kb)
    speed = {"mamba1": 0.01, "sliding_attention": 0.01, "mlp": 0.01, "attention": 0.2}
    # the model's Mamba at 0.1 of its floor, everything else at 0.5 (roofline ratio 13.1x)
    floors = {t: 0.5 * v for t, v in speed.items()} | {"mamba1": 0.001}
    times = fake_times(kb, s, per, speed)
    m = serving.build(s, _layers(times, floors), kb, per)
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert j.verdict == "refuted"  # 10.5x; no faster attention known: judged, and said so
    assert "no faster implementation known" in j.reason and "model mamba1" in j.reason
    blocked = _layers(times, floors, {"mamba1": {"mamba_ssm": "not run: PeerUnavailable: x"}})
    m = serving.build(s, blocked, kb, per)
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert j.verdict == "inconclusive"
    assert "model mamba1 prefill at 0.10 of its floor" in j.reason and "mamba_ssm" in j.reason
    # without a declared fraction the rule is off
    assert judge(m, parse_magnitude("3.73x"), {}).verdict == "refuted"


def test_a_ratio_above_the_roofline_ratio_is_refused(kb: KnowledgeBase) -> None:
    from flopkb.verify.errors import ExperimentError

    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    speed = {"mamba1": 0.01, "sliding_attention": 0.01, "mlp": 0.01, "attention": 0.2}
    times = fake_times(kb, s, per, speed)
    # floors in the same proportion as the times: roofline ratio = composed ratio (10.5x)
    m = serving.build(s, _layers(times, {t: 0.5 * v for t, v in speed.items()}), kb, per)
    assert m.data["roofline"]["equal_batch"] == pytest.approx(10.5)
    assert judge(m, parse_magnitude("3.73x"), m.conditions).verdict == "refuted"
    # the baseline's attention floor 10x lower: roofline ratio (24 x 0.01 + 24 x 0.005) /
    # (48 x 0.005) = 1.5x, the composed 10.5x is above 1.5 x 1.1
    low = {t: 0.5 * v for t, v in speed.items()} | {"attention": 0.01}
    m = serving.build(s, _layers(times, low), kb, per)
    assert m.data["roofline"]["equal_batch"] == pytest.approx(1.5)
    with pytest.raises(ExperimentError, match=r"implausible.*10\.5x.*roofline ratio 1\.5x"):
        judge(m, parse_magnitude("3.73x"), m.conditions)


def test_the_fastest_correct_implementation_is_composed_and_the_default_beside_it(
        kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    one = Interval(0.01, 0.01, 0.01)
    slow, fast = Interval(0.2, 0.2, 0.2), Interval(0.01 * 3.73 * 0.48 / 24 - 0.0001, 0.01, 0.01)
    times = {side: {"prefill": {}, "decode": {}} for side in ("model", "baseline")}
    for t in ("mamba1", "sliding_attention", "mlp"):
        times["model"]["prefill"][t] = one
    times["baseline"]["prefill"]["mlp"] = one
    att = (3.73 * 0.48 - 0.24) / 24  # a 3.73x composed ratio with this attention
    fast = Interval(att, att, att)
    times["baseline"]["prefill"]["attention"] = serving.LayerTimes({"bundled": slow,
                                                                    "sdpa": fast})
    m = serving.build(s, times, kb, per)
    row = next(r for r in m.sweep if r["layer_type"] == "attention")
    assert row["implementation"] == "sdpa" and row["default"] == "bundled"
    assert set(row["implementations"]) == {"bundled", "sdpa"}
    assert m.data["readings"]["equal_batch"]["ratio"]["value"] == pytest.approx(3.73)
    assert m.data["default_readings"]["equal_batch"]["value"] == pytest.approx(10.5)
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert j.verdict == "confirmed"
    assert "implementation-sensitive" in j.reason and "10.5x, refuted" in j.reason


def test_time_layer_checks_then_times_and_keeps_every_implementation(kb, monkeypatch) -> None:
    # the torch MoE loop syncs with the host: its capture is refused, stated, never timed eagerly
    from types import SimpleNamespace

    from flopkb.verify.context import Ceilings
    from flopkb.verify.errors import ExperimentError
    from flopkb.verify.experiments.serving.run import time_layer
    from flopkb.verify.timing import CaptureRefused

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    arch = tiny(kb.architectures["kimi-mla-48b-a3b-baseline"],
                **TINY["kimi-mla-48b-a3b-baseline"])
    ctx = Context(gpu=False, ceilings=Ceilings(1000.0, 4000.0, "test"))
    ctx.begin(60)

    def fake_time(label, fn, arg_sets, *, decode=False, implementation="", **_):
        if decode and implementation == "torch":
            try:
                raise CaptureRefused("not capturable in a CUDA graph (sync)")
            except CaptureRefused as exc:
                raise ExperimentError(f"{label}: {exc}") from exc
        fn(*arg_sets[0])
        return SimpleNamespace(median_ms=2.0, p10_ms=1.0, p90_ms=3.0)

    monkeypatch.setattr(ctx, "time", fake_time)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    lt = time_layer(ctx, arch, "moe", "decode", 3, 11, ("bundled", "torch"))
    assert list(lt.impls) == ["bundled"] and lt.impls["bundled"].value == pytest.approx(2e-3)
    # declared as host-synchronising: refused before any capture is tried, never checked
    assert "torch.unique" in lt.refused["torch"] and not lt.skipped
    assert [c["ok"] for c in ctx.checks] == [True]
    assert lt.floor_s is not None and lt.work["bytes"] > lt.work["weights_bytes"] > 0
    # a capture that fails in ctx.time is a refusal too, after the check
    monkeypatch.setattr(load_op("layers", "impls"), "HOST_SYNC", {})
    ctx.begin(60)
    lt = time_layer(ctx, arch, "moe", "decode", 3, 11, ("bundled", "torch"))
    assert lt.refused["torch"] == ("not capturable in a CUDA graph: CaptureRefused: not "
                                   "capturable in a CUDA graph (sync)")
    assert [c["ok"] for c in ctx.checks] == [True, True]


def test_the_stacked_figure_is_stated_beside_the_verdict(kb: KnowledgeBase) -> None:
    s = serving.setup(dict(hook("serving-samba-prompt").DEFAULTS))
    per = serving.batches(s, kb)
    speed = {"mamba1": 0.01, "sliding_attention": 0.01, "mlp": 0.01, "attention": 0.2}
    m = serving.build(s, fake_times(kb, s, per, speed), kb, per)
    m.data["stacked"] = {"model": {"kinds": ["mamba1", "mlp"], "stacked_ms": 21.0,
                                   "composed_ms": 20.0, "ratio": 1.05}, "baseline": None}
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert "model stacked mamba1+mlp: 21 ms end to end vs 20 ms composed (1.05x)" in j.reason
    # the stack runs norms and residual adds the composed sum leaves out: the 10% is read on
    # the like-for-like ratio (Samba's batch-16 step on the H200: 1.17x, 1.05x with them)
    m.data["stacked"]["model"].update(stacked_ms=0.2155, composed_ms=0.1845, ratio=1.168,
                                      glue_ms=0.0208)
    m.data["stacked"]["baseline"] = {"kinds": ["attention"], "stacked_ms": 1.3,
                                     "composed_ms": 1.0, "ratio": 1.3, "glue_ms": 0.05}
    j = judge(m, parse_magnitude("3.73x"), m.conditions)
    assert ("model stacked mamba1+mlp: 0.2155 ms end to end vs 0.1845 ms composed (1.17x; "
            "1.05x counting the stack's norms and residual adds, 0.0208 ms, which the composed "
            "sum leaves out)") in j.reason
    assert "(1.3x; 1.24x counting" in j.reason and "outside the 10% it is checked to" in j.reason


def test_the_stacked_call_site_runs_the_stack_with_the_chosen_implementations(
        kb, monkeypatch) -> None:
    # off, no figure; on (the default), the stack is built from each layer's chosen
    # implementation and timed through ctx.time (a stand-in here)
    from flopkb.verify.experiments.serving import run

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(build, "BACKEND", {"flash": "math", "masked": "math", "math": "math"})
    arch = tiny(kb.architectures["nemotron-h-8b"], **TINY["nemotron-h-8b"])
    ctx = Context(gpu=False)
    assert run.RUN_STACKED
    monkeypatch.setattr(run, "RUN_STACKED", False)
    assert run.stacked_figure(ctx, arch, "decode", 2, 7, {}) is None
    monkeypatch.setattr(run, "RUN_STACKED", True)
    time_each_once(ctx, monkeypatch, p10_ms=1.0, p90_ms=1.0)
    chosen = {"mamba2": "torch", "attention": "sdpa", "mlp": "cublas"}
    st = run.stacked_figure(ctx, arch, "decode", 2, 7, chosen)
    assert st is not None and st["kinds"] and set(st["kinds"]) <= set(chosen)
    assert st["stacked_ms"] == 1.0 and st["ratio"] == pytest.approx(1.0 / st["composed_ms"])

    # a stack that cannot run here is a stated note, never the experiment's failure
    def failing_time(label, fn, arg_sets, **_):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9 GiB")

    monkeypatch.setattr(ctx, "time", failing_time)
    assert run.stacked_figure(ctx, arch, "decode", 2, 7, chosen) is None
    assert any("no stacked-model figure (decode B=2 L=7): OutOfMemoryError: CUDA out of memory"
               in n for n in ctx.notes)
