"""The pass condition: reading it from a row, training steps and their gradients, and B1's
classification of a training step's kernels."""

from __future__ import annotations

import pytest

from flopkb.evidence.measurement import normalise, resolve
from flopkb.verify.experiments import _training, matmul_share

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("given", "want"), [("forward", "forward"), ("fwd", "forward"),
                                             ("training", "forward+backward"),
                                             ("Forward+Backward", "forward+backward"),
                                             ("bwd", "backward"), ("sideways", None)])
def test_pass_aliases(given, want):
    assert normalise(given) == want


def test_resolve_honours_a_supported_pass_and_notes_another():
    cond, notes = resolve({"pass": "forward"}, {"pass": "training"},
                          ("forward", "forward+backward"))
    assert cond["pass"] == "forward+backward" and notes == []
    cond, notes = resolve({"pass": "forward"}, {"pass": "training"})
    assert cond["pass"] == "forward" and "not measured" in notes[0]


def _cube(x, w):
    return (x * w) ** 3


def test_training_steps_compute_the_gradients_autograd_gives():
    x, w = torch.randn(5), torch.randn(5)
    fb, args = _training.step(_cube, (x, w), (0, 1), "forward+backward", seed=3)
    dx, dw = fb(*args)
    g = torch.Generator().manual_seed(3)
    dy = torch.randn(5, generator=g)
    assert torch.allclose(dx, 3 * (x * w) ** 2 * w * dy)
    assert torch.allclose(dw, 3 * (x * w) ** 2 * x * dy)
    bwd, none = _training.step(_cube, (x, w), (0,), "backward", seed=3)
    assert none == ()
    (again,) = bwd()
    assert torch.allclose(again, dx) and torch.allclose(bwd()[0], dx)  # replays the kept graph
    fwd, same = _training.step(_cube, (x, w), (0,), "forward")
    assert fwd is _cube and same == (x, w)


def test_check_grads_catches_a_wrong_gradient():
    from flopkb.verify.context import Context, ExperimentError

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, dy):
            return dy * 3

    ctx = Context(gpu=False)
    x = torch.randn(7)
    _training.check_grads(ctx, "right", lambda a: a * 2, lambda a: a * 2, (x,), (0,), ("x",))
    with pytest.raises(ExperimentError, match="dx"):
        _training.check_grads(ctx, "wrong", Wrong.apply, lambda a: a * 2, (x,), (0,), ("x",))


def test_matmul_share_counts_unknown_kernels_against_the_claim():
    mm, other, names = matmul_share.classify({"_chunk_scan_kernel": 3.0, "_bwd_dx_kernel": 1.0,
                                              "_state_passing_kernel": 0.5,
                                              "elementwise_kernel<...>": 0.5})
    assert (mm, other) == (4.0, 1.0)
    assert names == ["_state_passing_kernel", "elementwise_kernel<...>"]


@pytest.mark.parametrize(("impl", "error"), [("bundled", "ExperimentError"),
                                             ("fla", "PeerUnavailable")])
def test_b2_without_a_backward_is_an_error_for_ours_and_not_run_for_a_peer(monkeypatch, impl,
                                                                          error):
    from flopkb.kernelpkg import load_op
    from flopkb.verify import context
    from flopkb.verify.experiments import head_dim_memory

    ssd_bench = load_op("ssd", "bench")

    def no_step(ctx, label, *args, **kw):
        ctx.notes.append(f"{label}: forward+backward not run (RuntimeError: no backward)")

    monkeypatch.setattr(_training, "optional_step", no_step)
    monkeypatch.setattr(ssd_bench, "check_against_reference", lambda *a, **k: None)
    ctx = context.Context(gpu=False, impls={"ssd": impl})
    ssd = ssd_bench.Impl(lambda *a: a[0], impl)
    cond = {**head_dim_memory.DEFAULTS, "tokens": 16, "seq_len": 8, "state_dim": 4}
    with pytest.raises(getattr(context, error), match="no backward"):
        head_dim_memory._point(ctx, ssd, cond, 2, 4, 8)
