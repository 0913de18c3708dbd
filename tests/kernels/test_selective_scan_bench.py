"""bench/kernels_scan_bwd.py in --smoke mode (CPU, TRITON_INTERPRET=1, tiny sizes): the checks,
the interleaved rounds, the JSON, and the peer's plumbing with a stand-in extension module that
answers Mamba's `fwd`/`bwd` calls through the PyTorch reference."""

from __future__ import annotations

import json
import sys

import pytest

FAKE_PEER = '''
import torch
from flopkb_kernels.selective_scan.reference import selective_scan_reference as ref


def fwd(u, delta, A, B, C, D, z, bias, softplus):
    return ref(u, delta, A, B[:, 0], C[:, 0], D, bias, softplus), torch.zeros(1)


def bwd(u, delta, A, B, C, D, z, bias, dout, x, out, dz, softplus, recompute):
    ins = (u, delta, A, B[:, 0], C[:, 0], D, bias)
    leaves = [t.float().requires_grad_() if t is not None else None for t in ins]
    ref(*leaves, softplus).backward(dout.float() * SCALE)
    g = [t.grad if t is not None else None for t in leaves]
    return (g[0].to(u.dtype), g[1].to(delta.dtype), g[2], g[3][:, None].to(B.dtype),
            g[4][:, None].to(C.dtype), g[5], g[6])
'''


def _bench():
    from bench import kernels_scan_bwd

    return kernels_scan_bwd


def _run(tmp_path, monkeypatch, *extra: str) -> dict:
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = tmp_path / "out.json"
    code = _bench().main(["--smoke", "--calls", "layer", "--fwd-variants", "sp_tile",
                          "--bwd-variants", "base", "--out", str(out), *extra])
    assert code == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize(("scale", "rounds"), [(1.0, 3), (1.5, 1)])
def test_smoke_run_checks_and_times_ours_and_the_peer(kernels, tmp_path, monkeypatch, scale,
                                                      rounds):
    name = f"fake_scan_ext_{str(scale).replace('.', '_')}"
    (tmp_path / f"{name}.py").write_text(FAKE_PEER.replace("SCALE", repr(scale)))
    result = _run(tmp_path, monkeypatch, "--rounds", str(rounds), "--mamba-ext", str(tmp_path),
                  "--mamba-module", name)
    assert result["machine"]["python"] and "--smoke" in result["argv"]
    (shape,) = result["shapes"]
    assert shape["shape"]["call"] == "layer"
    impls = shape["impls"]
    for key in ("ours:fwd:sp_tile", "ours:train:base"):
        assert impls[key]["correct"], impls[key]
    train = impls["ours:train:base"]
    assert set(train["rel_err"]) == {"y", "u", "delta", "A", "Bm", "Cm", "Dskip", "delta_bias"}
    assert {k: len(v) for k, v in train["rounds"].items()} == {
        "fwd_train": rounds, "bwd": rounds, "fwd+bwd": rounds}
    peer = impls["mamba_cuda"]
    correct = scale == 1.0
    # A peer whose gradients are 1.5x too large fails its check and gets no time.
    assert peer["correct"] is correct
    assert ("rounds" in peer) is correct
    assert (shape["ratios"]["fwd+bwd"]["ratio"] is not None) is correct


def test_the_paper_family_sweeps_lengths_at_batch_1(kernels, tmp_path, monkeypatch):
    result = _run(tmp_path, monkeypatch, "--rounds", "1", "--family", "paper")
    assert result["family"] == "paper"
    assert [(s["shape"]["B"], s["shape"]["T"]) for s in result["shapes"]] == [(1, 8), (1, 16)]
    assert all(s["impls"]["ours:fwd:sp_tile"]["correct"] for s in result["shapes"])
    full = _bench().FAMILIES["paper"]
    assert (full["batch"], full["dims"], full["dstates"]) == (1, (1024,), (16,))
    assert full["steps"] == tuple(2**k for k in range(9, 20))


def test_absent_broken_or_forward_only_peer_is_not_run(kernels, tmp_path, monkeypatch):
    bench = _bench()
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert bench.load_mamba(None, "x") == (None, "not-run: no --mamba-ext given")
    assert "is not a folder" in bench.load_mamba(str(tmp_path / "missing"), "x")[1]
    (tmp_path / "broken_ext.py").write_text("raise ImportError('undefined symbol')\n")
    assert "undefined symbol" in bench.load_mamba(str(tmp_path), "broken_ext")[1]
    (tmp_path / "fwd_only_ext.py").write_text("def fwd(*args):\n    raise RuntimeError\n")
    ext, note = bench.load_mamba(str(tmp_path), "fwd_only_ext")
    assert ext is None and note.startswith("not-run") and "forward-only" in note


def test_smoke_run_without_peer_records_it_as_not_run(kernels, tmp_path, monkeypatch):
    result = _run(tmp_path, monkeypatch, "--rounds", "1")
    peer = result["shapes"][0]["impls"]["mamba_cuda"]
    assert peer["verdict"] == "not-run: no --mamba-ext given" and not peer["ms"]
    assert result["shapes"][0]["ratios"]["fwd"]["ratio"] is None
