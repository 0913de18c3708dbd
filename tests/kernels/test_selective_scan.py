"""Selective scan kernel vs its PyTorch reference (CPU through TRITON_INTERPRET=1, or a GPU).

Relative-error bounds ||out - ref|| / ||ref||, against a float64 reference on the same inputs:
fp32 inputs 1e-5 (fp32 arithmetic; exp2 and a different summation order), bf16 inputs 1e-2
(the output is rounded to bf16: 2^-9 per element).
"""

from __future__ import annotations

import pytest
import torch

BOUND = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
# Every code path of the wrapper: the default (sequential, unrolled by 4, [BLOCK_D, 4] tiles, B/C
# copied time-major), the plain one-step loop on Mamba's layout, the time-major copies, delta'
# prepared per column and per tile, and the associative schedule.
CONFIGS = {
    "default": {},
    "plain": {"unroll": 1, "transpose_bc": False},
    "time_major": {"time_major": True},
    "sp_columns": {"sp_tile": False},
    "sp_tile": {"sp_tile": True},
    "assoc": {"schedule": "assoc", "block_t": 8},
}


def _inputs(device, batch=2, dim=5, steps=37, dstate=7, dtype=torch.float32):
    u = torch.randn(batch, dim, steps, device=device).to(dtype)
    delta = (torch.rand(batch, dim, steps, device=device) * 0.5).to(dtype)
    A = -(torch.rand(dim, dstate, device=device) * 2 + 0.1)
    Bm = torch.randn(batch, dstate, steps, device=device).to(dtype)
    Cm = torch.randn(batch, dstate, steps, device=device).to(dtype)
    return u, delta, A, Bm, Cm


def _rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    assert not torch.isnan(out).any(), "kernel left unwritten (NaN) elements"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def _ref64(ref_fn, u, delta, A, Bm, Cm, **kw):
    return ref_fn(u.double(), delta.double(), A, Bm.double(), Cm.double(), **kw)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("options", ["plain", "full"])
def test_selective_scan_fp32_matches_float64_reference(kernels, device, config, options):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference
    from flopkb_kernels.selective_scan.scan import selective_scan

    u, delta, A, Bm, Cm = _inputs(device)
    kw = {}
    if options == "full":
        dim = u.shape[1]
        kw = {"Dskip": torch.randn(dim, device=device),
              "delta_bias": torch.randn(dim, device=device) * 0.3, "delta_softplus": True}
    out = torch.full_like(u, float("nan"))
    y = selective_scan(u, delta, A, Bm, Cm, **kw, **CONFIGS[config], out=out)
    assert y is out
    assert _rel(y, _ref64(selective_scan_reference, u, delta, A, Bm, Cm, **kw)) < BOUND[u.dtype]


@pytest.mark.parametrize("config", ["default", "plain", "assoc"])
def test_selective_scan_bf16_odd_sizes(kernels, device, config):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference
    from flopkb_kernels.selective_scan.scan import selective_scan

    u, delta, A, Bm, Cm = _inputs(device, batch=1, dim=3, steps=19, dstate=5,
                                  dtype=torch.bfloat16)
    Dskip = torch.randn(3, device=device)
    out = torch.full_like(u, float("nan"))
    y = selective_scan(u, delta, A, Bm, Cm, Dskip, **CONFIGS[config], out=out)
    ref = _ref64(selective_scan_reference, u, delta, A, Bm, Cm, Dskip=Dskip)
    assert y.dtype == torch.bfloat16
    assert _rel(y, ref) < BOUND[torch.bfloat16]


def test_schedules_agree_with_each_other(kernels, device):
    from flopkb_kernels.selective_scan.scan import selective_scan

    args = _inputs(device, steps=40)
    seq = selective_scan(*args, schedule="sequential")
    assoc = selective_scan(*args, schedule="assoc", block_t=16)
    assert _rel(assoc, seq) < 1e-5


def test_reference_float32_matches_float64(kernels, device):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference

    args = _inputs(device)
    y32 = selective_scan_reference(*args)
    assert y32.dtype == torch.float32
    assert _rel(y32, _ref64(selective_scan_reference, *args)) < 1e-5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("u_2d", "expected u of shape"),
        ("delta_shape", "expected delta of shape"),
        ("A_dtype", "expected A of dtype float32"),
        ("B_noncontig", "expected Bm to be contiguous"),
        ("C_type", "expected Cm to be a torch.Tensor"),
        ("schedule", "expected schedule"),
        ("unroll", "expected unroll"),
        ("out_dtype", "expected out of dtype"),
    ],
)
def test_wrapper_rejects_bad_arguments(kernels, device, change, message):
    from flopkb_kernels.selective_scan.scan import selective_scan

    u, delta, A, Bm, Cm = _inputs(device)
    kw: dict = {}
    if change == "u_2d":
        u = u[0]
    elif change == "delta_shape":
        delta = delta[:, :, :-1].contiguous()
    elif change == "A_dtype":
        A = A.double()
    elif change == "B_noncontig":
        Bm = Bm.transpose(1, 2).contiguous().transpose(1, 2)
    elif change == "C_type":
        Cm = Cm.tolist()
    elif change == "schedule":
        kw["schedule"] = "parallel"
    elif change == "unroll":
        kw["unroll"] = 3
    elif change == "out_dtype":
        kw["out"] = torch.empty_like(u, dtype=torch.float64)
    with pytest.raises(ValueError, match=message):
        selective_scan(u, delta, A, Bm, Cm, **kw)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_selective_scan_gpu_medium(kernels):
    from flopkb_kernels.selective_scan.reference import selective_scan_reference
    from flopkb_kernels.selective_scan.scan import selective_scan

    args = _inputs("cuda", batch=2, dim=96, steps=300, dstate=16, dtype=torch.bfloat16)
    ref = _ref64(selective_scan_reference, *args)
    for config in CONFIGS.values():
        y = selective_scan(*args, **config, out=torch.full_like(args[0], float("nan")))
        assert _rel(y, ref) < BOUND[torch.bfloat16]
