"""Per-channel-decay chunked SSD (claim A5) vs its reference and vs the scalar-decay kernel.

Bounds as in test_ssd.py: fp32 1e-5, bf16 3e-2 (relative, against float64).
"""

from __future__ import annotations

import pytest
import torch
from ssd_inputs import BOUND, SHAPE, rel, ssd_inputs


def _pc_ref64(x, dt, g, Bm, Cm, Dskip=None):
    from flopkb_kernels.ssd.reference import ssd_per_channel_reference

    return ssd_per_channel_reference(
        x.double(), dt.double(), g.double(), Bm.double(), Cm.double(), Dskip
    )


@pytest.mark.parametrize("chunk", [16, 32, 64])
def test_per_channel_matches_reference(kernels, device, chunk):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    Dskip = torch.randn(SHAPE["heads"], device=device)
    out = torch.full_like(x, float("nan"))
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, Dskip, chunk_size=chunk, out=out)
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm, Dskip)) < BOUND[torch.float32]


def test_per_channel_bf16(kernels, device):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE, dtype=torch.bfloat16)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.bfloat16]


def test_per_channel_with_shared_decay_equals_scalar_kernel(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = (dt * A)[..., None].expand(*dt.shape, SHAPE["dstate"]).contiguous()
    scalar = ssd_chunked(x, dt, A, Bm, Cm, chunk_size=32)
    per_channel = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32)
    assert rel(per_channel, scalar) < 1e-5


def test_per_channel_rejects_bad_decay_shape(kernels, device):
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE)
    g = -torch.rand(*dt.shape, SHAPE["dstate"] + 1, device=device)
    with pytest.raises(ValueError, match="expected log_decay of shape"):
        ssd_chunked_per_channel(x, dt, g, Bm, Cm)


@pytest.mark.parametrize("chunk", [32, 64])
def test_per_channel_strong_decay_does_not_overflow(kernels, device, chunk):
    # A 64-row block whose log-decay sums to about -190 per channel: the factored diagonal tile
    # (C_i exp(G_i - G_r), B_j exp(G_r - G_j)) would need exp(+190) and exp(-190), past fp32.
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    shape = SHAPE | {"steps": 70}
    x, dt, _, Bm, Cm = ssd_inputs(device, **shape)
    g = -torch.rand(*dt.shape, shape["dstate"], device=device) * 0.3
    g[..., :3] = -3.0 - torch.rand(*dt.shape, 3, device=device)
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=chunk,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.float32]


def test_per_channel_fp16_decay_past_its_range(kernels, device):
    # fp16 tiles end at 2^16: a 32-row block decaying by ~e^-16 per channel already needs the
    # sliced diagonal in half precision.
    from flopkb_kernels.ssd.per_channel import ssd_chunked_per_channel

    x, dt, _, Bm, Cm = ssd_inputs(device, **SHAPE, dtype=torch.float16)
    g = -torch.rand(*dt.shape, SHAPE["dstate"], device=device) * 0.3
    g[..., :2] = -0.5 - 0.2 * torch.rand(*dt.shape, 2, device=device)
    y = ssd_chunked_per_channel(x, dt, g, Bm, Cm, chunk_size=32,
                                out=torch.full_like(x, float("nan")))
    assert rel(y, _pc_ref64(x, dt, g, Bm, Cm)) < BOUND[torch.bfloat16]
