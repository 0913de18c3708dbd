"""The stacked reduced-depth model (kernels/layers/stack.py) on the CPU: its depth per record,
its forward against the layers composed by hand (norms, residuals, the same builds), its decode
step against one step of that reference (states carried), and `time_stacked`'s bookkeeping with
a stand-in timer. Kernels through the Triton interpreter, SDPA's math backend."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kb import KnowledgeBase, load_kb
from flopkb.kernelpkg import load_op
from flopkb.paths import bundled_root
from flopkb.verify.context import Context
from tests.unit.verify.test_serving import TINY, tiny  # the serving tests' tiny architectures

build, prefill, decode, stack = (load_op("layers", n)
                                 for n in ("_build", "prefill", "decode", "stack"))



@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


@pytest.fixture
def cpu(monkeypatch) -> Context:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(build, "BACKEND", {"flash": "math", "masked": "math"})
    return Context(gpu=False)


def norm_ref(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    xf = x.double()
    return (xf / (xf.pow(2).mean(-1, keepdim=True) + stack.EPS).sqrt() * w.double()).to(x.dtype)


def test_the_norm_is_rms_norm_and_the_glue_is_every_norm_and_add(kb, cpu) -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 37, generator=g).bfloat16()
    w = (1 + 0.1 * torch.randn(37, generator=g)).bfloat16()
    assert rel(stack.rms_norm(x, w), norm_ref(x, w)) < 1e-2
    arch = tiny(kb.architectures["llama-3-1-8b"], **TINY["nemotron-h-8b"])
    s = stack.build_stack(cpu, arch, "decode", 2, 5)
    h = s.x
    for w in s.norms[:-1]:
        h = h + norm_ref(h, w)
    assert rel(s.glue(s.x), norm_ref(h, s.norms[-1])) < 2e-2


def by_hand(ctx, arch, phase: str, kinds, batch: int, tokens: int, norms, x, steps: int = 1):
    """The layers built afresh from the stack's seeds and composed here, `steps` times on x."""
    builder = prefill.prefill_layer if phase == "prefill" else decode.decode_layer
    layers = [builder(ctx, arch, k, batch, tokens, seed=stack.SEED_STRIDE * (i + 1))
              for i, k in enumerate(kinds)]
    outs = []
    for _ in range(steps):
        h = x
        for (fn, args), w in zip(layers, norms[:-1], strict=True):
            h = h + fn(norm_ref(h, w).reshape(args[0].shape)).reshape(h.shape)
        outs.append(norm_ref(h, norms[-1]))
    return outs


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def test_depth_is_one_period_or_the_shortest_window_of_every_type(kb) -> None:
    kinds = {a: stack.stack_kinds(kb.architectures[a]) for a in
             ("samba-1-7b", "nemotron-h-8b", "kimi-linear-48b-a3b", "llama-3-1-8b",
              "jamba-1-5-mini", "llama-3-1-6b-samba-baseline")}
    assert kinds["samba-1-7b"] == ["mamba1", "mlp", "sliding_attention", "mlp"]
    assert kinds["nemotron-h-8b"] == ["mamba2", "mlp", "mamba2", "attention"]
    assert "".join(k[0] for k in kinds["kimi-linear-48b-a3b"]) == "kmkmkmmm"
    assert kinds["kimi-linear-48b-a3b"][6] == "mla"
    assert kinds["llama-3-1-8b"] == ["attention", "mlp"] * 4
    assert kinds["llama-3-1-6b-samba-baseline"] == ["attention", "mlp"] * 2
    assert len(kinds["jamba-1-5-mini"]) == 16 and kinds["jamba-1-5-mini"][8] == "attention"
    assert kinds["jamba-1-5-mini"].count("moe") == 4


@pytest.mark.parametrize("aid", list(TINY))
def test_stacked_prefill_is_the_layers_composed_by_hand(kb, cpu, aid) -> None:
    arch = tiny(kb.architectures[aid], **TINY[aid])
    s = stack.build_stack(cpu, arch, "prefill", 2, 11)
    assert s.x.shape == (22, 32) and len(s.norms) == len(s.kinds) + 1
    with torch.no_grad():
        got = s.forward(s.x)
        want = by_hand(cpu, arch, "prefill", s.kinds, 2, 11, s.norms, s.x)[0]
        # the reference can tell: the same layers chained without residual adds are far off
        h = s.x
        for (fn, args), w in zip(s.layers, s.norms, strict=False):
            h = fn(norm_ref(h, w).reshape(args[0].shape)).reshape(s.x.shape)
        no_residual = norm_ref(h, s.norms[-1])
    assert torch.isfinite(got.float()).all()
    assert rel(got, want) < 2e-2
    assert rel(no_residual, want) > 0.1


@pytest.mark.parametrize("aid", list(TINY))
def test_the_static_decode_step_is_one_step_of_the_reference(kb, cpu, aid) -> None:
    arch = tiny(kb.architectures[aid], **TINY[aid])
    s = stack.build_stack(cpu, arch, "decode", 3, 13)
    with torch.no_grad():
        step = stack.GraphedStep(s)  # no CUDA here: the same step, eagerly, on its buffer
        first = step(s.x).clone()
        second = step(s.x).clone()
        ref = by_hand(cpu, arch, "decode", s.kinds, 3, 13, s.norms, s.x, steps=2)
    assert first.shape == (3, 32)
    assert rel(first, ref[0]) < 2e-2 and rel(second, ref[1]) < 2e-2
    if any(k.startswith("mamba") for k in s.kinds):
        # the recurrent states are static tensors updated in place: step two reads step one's
        assert rel(second, first) > 1e-3


def test_time_stacked_sums_its_own_layers_timed_alone(kb, cpu, monkeypatch) -> None:
    arch = tiny(kb.architectures["nemotron-h-8b"], **TINY["nemotron-h-8b"])
    seen: list[tuple[str, bool]] = []
    per_kind = {"mamba2": 1.0, "mlp": 2.0, "attention": 4.0}

    def fake_time(label, fn, arg_sets, *, decode=False, **_):
        out = fn(*arg_sets[0])
        assert torch.isfinite(out.float()).all()
        seen.append((label, decode))
        if "layer" in label:
            kind = label.split(" layer ")[1].split()[1]
            ms = per_kind[kind] * (1.1 if label.endswith("round 1") else 1.0)
        elif " glue " in label:
            ms = 0.5
        else:
            ms = 9.5
        return SimpleNamespace(median_ms=ms)

    monkeypatch.setattr(cpu, "time", fake_time)
    t = stack.time_stacked(cpu, arch, "decode", 2, 7, rounds=3)
    assert t.kinds == ["mamba2", "mlp", "mamba2", "attention"]
    assert len(seen) == 3 * 6 and all(d for _, d in seen)
    assert t.per_layer_ms == [1.0, 2.0, 1.0, 4.0]
    assert t.composed_ms == pytest.approx(8.0) and t.stacked_ms == pytest.approx(9.5)
    assert t.ratio == pytest.approx(9.5 / 8.0) and t.glue_ms == pytest.approx(0.5)
    assert t.ratio_with_glue == pytest.approx(9.5 / 8.5)
    assert t.round_ratios[1] == pytest.approx(9.5 / 8.8)
    assert t.as_dict()["ratio"] == pytest.approx(t.ratio)


def test_bad_requests_are_value_errors(kb, cpu) -> None:
    arch = tiny(kb.architectures["nemotron-h-8b"], **TINY["nemotron-h-8b"])
    with pytest.raises(ValueError, match="expected phase"):
        stack.build_stack(cpu, arch, "train", 1, 4)
    with pytest.raises(ValueError, match="batch >= 1"):
        stack.build_stack(cpu, arch, "decode", 0, 4)
    with pytest.raises(ValueError, match="rounds >= 1"):
        stack.time_stacked(cpu, arch, "decode", 1, 4, rounds=0)
    counts_only = SimpleNamespace(id="x", layers=SimpleNamespace(pattern=None))
    with pytest.raises(ValueError, match="counts only"):
        stack.stack_kinds(counts_only)


def test_the_state_guard_puts_back_what_warm_up_steps_wrote(kb, cpu) -> None:
    arch = tiny(kb.architectures["nemotron-h-8b"], **TINY["nemotron-h-8b"])
    s = stack.build_stack(cpu, arch, "decode", 2, 9)
    with torch.no_grad():
        first = s.forward(s.x).clone()  # advances the Mamba-2 states
        with stack.StateGuard(s) as guard:
            s.forward(s.x)
            s.forward(s.x)
        third = s.forward(s.x).clone()
        fresh = stack.build_stack(cpu, arch, "decode", 2, 9)
        fresh.forward(fresh.x)
        want = fresh.forward(fresh.x)
    # two states and two conv states per Mamba-2 layer were written and put back
    assert guard.restored == 4 and guard.unrestored == []
    assert rel(third, want) < 1e-6 and rel(third, first) > 1e-3
    with torch.no_grad(), stack.StateGuard(s, max_bytes=0) as none_saved:
        s.forward(s.x)
    assert len(none_saved.unrestored) == 2  # the conv states (torch copy_); Triton writes unseen
