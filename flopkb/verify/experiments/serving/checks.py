"""The serving experiments' CPU check (plan mode): the kernels the layers run, against their
references at odd sizes through the Triton interpreter."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flopkb.verify.context import Context


def cpu_check(ctx: Context) -> None:
    """The decode steps, the split-KV and windowed attention, the absorbed MLA step and the
    grouped MoE against their references, odd sizes, through the Triton interpreter (the
    layers themselves are checked on the device before each is timed)."""
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
    split_kv, window = ctx.load("attention", "split_kv"), ctx.load("attention", "window")
    q, kc, vc = rnd(2, 6, 16), rnd(2, 19, 2, 16), rnd(2, 19, 2, 16)
    ctx.check("attention.split_kv.split_kv_decode", split_kv.split_kv_decode(q, kc, vc),
              att_ref.split_kv_decode_reference(q, kc, vc))
    q, kc, vc = rnd(1, 23, 4, 16), rnd(1, 23, 2, 16), rnd(1, 23, 2, 16)
    ctx.check("attention.window.window_attention",
              window.window_attention(q, kc, vc, window=5),
              att_ref.window_attention_reference(q, kc, vc, window=5))
    mla, mla_ref = ctx.load("mla", "step"), ctx.load("mla", "reference")
    h, nope, rope, r, v = 3, 8, 4, 16, 8
    a3 = (rnd(2, h, nope), rnd(2, h, rope), rnd(2, 21, r + rope), torch.tensor([21, 13]),
          rnd(h, nope, r), rnd(h, r, v))
    ctx.check("mla.step.mla_decode_step", mla.mla_decode_step(*a3),
              mla_ref.mla_decode_reference(*a3))
    moe, moe_ref = ctx.load("moe", "forward"), ctx.load("moe", "reference")
    ids = torch.randint(0, 5, (3, 2), generator=g)
    a4 = (rnd(3, 24), ids, torch.softmax(rnd(3, 2), -1), rnd(5, 2 * 8, 24) / 5, rnd(5, 24, 8) / 3)
    ctx.check("moe.forward.moe_forward", moe.moe_forward(*a4), moe_ref.moe_reference(*a4))
