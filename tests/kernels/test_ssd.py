"""SSD kernels (scan, chunked, quadratic) vs the PyTorch references, and vs each other.

Relative-error bounds ||out - ref|| / ||ref|| against a float64 reference on the same inputs:
fp32 inputs 1e-5 (fp32 arithmetic; the chunked and quadratic dots run in IEEE fp32), bf16 inputs
3e-2 (the tensor-core schedules round the decay-weighted scores and the carried state to bf16
before their dots, and the output is bf16).
"""

from __future__ import annotations

import pytest
import torch
from ssd_inputs import BOUND, SHAPE, rel, ssd_inputs


def ref64(x, dt, A, Bm, Cm, Dskip=None):
    from flopkb_kernels.ssd.reference import ssd_reference

    return ssd_reference(x.double(), dt.double(), A, Bm.double(), Cm.double(), Dskip)


def _schedules():
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.quadratic import ssd_quadratic
    from flopkb_kernels.ssd.scan import ssd_scan

    return {
        "scan": ssd_scan,
        "chunked16": lambda *a, **k: ssd_chunked(*a, chunk_size=16, **k),
        "chunked32": lambda *a, **k: ssd_chunked(*a, chunk_size=32, **k),
        "chunked64": lambda *a, **k: ssd_chunked(*a, chunk_size=64, **k),
        "quadratic": ssd_quadratic,
    }


@pytest.mark.parametrize("name", ["scan", "chunked16", "chunked32", "chunked64", "quadratic"])
def test_fp32_matches_float64_reference(kernels, device, name):
    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    Dskip = torch.randn(SHAPE["heads"], device=device)
    out = torch.full_like(x, float("nan"))
    y = _schedules()[name](x, dt, A, Bm, Cm, Dskip, out=out)
    assert y is out
    assert rel(y, ref64(x, dt, A, Bm, Cm, Dskip)) < BOUND[torch.float32]


@pytest.mark.parametrize("name", ["scan", "chunked32", "quadratic"])
def test_bf16_matches_reference(kernels, device, name):
    x, dt, A, Bm, Cm = ssd_inputs(device, **(SHAPE | {"headdim": 17, "dstate": 9}),
                                  dtype=torch.bfloat16)
    y = _schedules()[name](x, dt, A, Bm, Cm, out=torch.full_like(x, float("nan")))
    assert y.dtype == torch.bfloat16
    assert rel(y, ref64(x, dt, A, Bm, Cm)) < BOUND[torch.bfloat16]


def test_scan_and_chunked_agree(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked
    from flopkb_kernels.ssd.scan import ssd_scan

    args = ssd_inputs(device, **(SHAPE | {"steps": 70}))
    assert rel(ssd_chunked(*args, chunk_size=32), ssd_scan(*args)) < 1e-5
    assert rel(ssd_scan(*args, block_p=2, num_warps=4), ssd_scan(*args)) < 1e-6


def test_long_chunk_sizes_on_a_short_sequence(kernels, device):
    from flopkb_kernels.ssd.chunked import ssd_chunked

    args = ssd_inputs(device, **(SHAPE | {"steps": 21, "heads": 2, "groups": 1}))
    ref = ref64(*args)
    for chunk in (128, 256):
        y = ssd_chunked(*args, chunk_size=chunk, out=torch.full_like(args[0], float("nan")))
        assert rel(y, ref) < BOUND[torch.float32]


def test_references_agree(kernels, device):
    from flopkb_kernels.ssd.reference import ssd_quadratic_reference, ssd_reference

    args = ssd_inputs(device, **SHAPE)
    Dskip = torch.randn(SHAPE["heads"], device=device)
    seq32 = ssd_reference(*args, Dskip)
    quad64 = ssd_quadratic_reference(
        args[0].double(), args[1].double(), args[2], args[3].double(), args[4].double(), Dskip
    )
    assert rel(quad64, ref64(*args, Dskip)) < 1e-12
    assert rel(seq32, quad64) < 1e-5


def test_stages_run_in_order_and_split_matmul_work(kernels, device):
    from flopkb_kernels.ssd.chunked import MATMUL_STAGES, ssd_chunked_stages

    args = ssd_inputs(device, **SHAPE)
    run = ssd_chunked_stages(*args, chunk_size=16, out=torch.full_like(args[0], float("nan")))
    assert list(run.stages) == ["chunk_bmm", "chunk_state", "state_passing", "chunk_scan"]
    assert set(MATMUL_STAGES) <= set(run.stages)
    assert rel(run(), ref64(*args)) < BOUND[torch.float32]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("x_3d", "expected x of shape"),
        ("dt_shape", "expected dt of shape"),
        ("A_dtype", "expected A of dtype float32"),
        ("groups", "expected a group count dividing H"),
        ("C_dtype", "expected Cm of dtype"),
        ("x_noncontig", "expected x to be contiguous"),
        ("D_shape", "expected Dskip of shape"),
        ("chunk", "expected chunk_size"),
    ],
)
def test_wrappers_reject_bad_arguments(kernels, device, change, message):
    from flopkb_kernels.ssd.chunked import ssd_chunked

    x, dt, A, Bm, Cm = ssd_inputs(device, **SHAPE)
    Dskip, kw = None, {}
    if change == "x_3d":
        x = x[..., 0]
    elif change == "dt_shape":
        dt = dt[:, :-1].contiguous()
    elif change == "A_dtype":
        A = A.half()
    elif change == "groups":
        Bm = torch.randn(2, 45, 3, 7, device=device)
        Cm = Bm.clone()
    elif change == "C_dtype":
        Cm = Cm.double()
    elif change == "x_noncontig":
        x = x.transpose(2, 3).contiguous().transpose(2, 3)
    elif change == "D_shape":
        Dskip = torch.randn(3, device=device)
    elif change == "chunk":
        kw["chunk_size"] = 48
    with pytest.raises(ValueError, match=message):
        ssd_chunked(x, dt, A, Bm, Cm, Dskip, **kw)
    if change != "chunk":
        for f in _schedules().values():
            with pytest.raises(ValueError, match=message):
                f(x, dt, A, Bm, Cm, Dskip)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_bf16_all_schedules(kernels):
    args = ssd_inputs("cuda", batch=2, steps=700, heads=4, headdim=64, groups=1, dstate=128,
                      dtype=torch.bfloat16)
    ref = ref64(*args)
    for name, f in _schedules().items():
        y = f(*args, out=torch.full_like(args[0], float("nan")))
        assert rel(y, ref) < BOUND[torch.bfloat16], name
