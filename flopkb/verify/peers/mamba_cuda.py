"""Mamba's CUDA selective scan (forward and backward), built on the GPU machine at run time.

Nothing of Mamba's code is committed: the mamba-ssm source distribution (its `csrc/selective_scan/`)
is found at run time (`FLOPKB_MAMBA_SDIST`, else `.peers/mamba_ssm-*.tar.gz` beside the KB or in
the working folder), its selective-scan folder extracted into a cache folder, and compiled with
`torch.utils.cpp_extension` for this GPU's architecture only. Only the bf16-input, fp32-weight
instantiations are compiled (Mamba's `selective_scan.cpp` binding dispatches over every input and
weight type, so the others are linked to small stubs of ours that raise). A module built earlier
is reused: from the cache, or from `FLOPKB_MAMBA_EXT` (a path to the built `.so`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flopkb.verify.errors import PeerUnavailable

NAME = "flopkb_mamba_selective_scan"
SDIST_GLOB = "mamba_ssm-*.tar.gz"
SUBDIR = "csrc/selective_scan"
# Mamba's own nvcc flags (its setup.py), less the architecture list: one -gencode for this GPU.
NVCC_FLAGS = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__",
              "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_OPERATORS__",
              "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_BFLOAT162_OPERATORS__",
              "-U__CUDA_NO_BFLOAT162_CONVERSIONS__", "--expt-relaxed-constexpr",
              "--expt-extended-lambda", "--use_fast_math"]
BUILT = {"fwd": ("selective_scan_fwd_bf16.cu",), "bwd": ("selective_scan_bwd_bf16_real.cu",)}
_INPUTS = ("at::Half", "at::BFloat16", "float")
_WEIGHTS = ("float", "c10::complex<float>")
# instantiations the compiled .cu files provide; every other one the binding names gets a stub
_PROVIDED = {("fwd", "at::BFloat16", "float"), ("fwd", "at::BFloat16", "c10::complex<float>"),
             ("bwd", "at::BFloat16", "float")}


def stubs_source() -> str:
    """Our stubs for the instantiations left unbuilt: they raise if ever called."""
    lines = ["#include <stdexcept>", "#include <cuda_runtime.h>", "#include <c10/util/Half.h>",
             "#include <c10/util/BFloat16.h>", "#include <c10/util/complex.h>",
             '#include "selective_scan.h"',
             "template<typename I, typename W> void selective_scan_fwd_cuda(SSMParamsBase&, "
             "cudaStream_t);",
             "template<typename I, typename W> void selective_scan_bwd_cuda(SSMParamsBwd&, "
             "cudaStream_t);"]
    for kind, params in (("fwd", "SSMParamsBase"), ("bwd", "SSMParamsBwd")):
        for i in _INPUTS:
            for w in _WEIGHTS:
                if (kind, i, w) in _PROVIDED:
                    continue
                lines.append(
                    f"template<> void selective_scan_{kind}_cuda<{i}, {w}>({params}&, "
                    f'cudaStream_t) {{ throw std::runtime_error("flopkb built Mamba\'s selective '
                    f'scan for bf16 inputs and fp32 weights only"); }}')
    return "\n".join(lines) + "\n"


def find_sdist(search: list[Path]) -> Path:
    env = os.environ.get("FLOPKB_MAMBA_SDIST")
    if env:
        path = Path(env)
        if not path.exists():
            raise PeerUnavailable(f"FLOPKB_MAMBA_SDIST={env} does not exist")
        return path
    for folder in search:
        found = sorted((folder / ".peers").glob(SDIST_GLOB)) if folder.is_dir() else []
        if found:
            return found[-1]
    raise PeerUnavailable("no mamba-ssm source distribution (set FLOPKB_MAMBA_SDIST or put "
                          f"{SDIST_GLOB} in .peers/)")


def extract(sdist: Path, dest: Path) -> Path:
    """The sdist's csrc/selective_scan files (regular files only) copied into `dest`."""
    if sdist.is_dir():
        folder = sdist / SUBDIR
        if not folder.is_dir():
            raise PeerUnavailable(f"{sdist} has no {SUBDIR}/")
        return folder
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers()
                   if m.isfile() and f"/{SUBDIR}/" in m.name and ".." not in m.name]
        if not members:
            raise PeerUnavailable(f"{sdist.name} has no {SUBDIR}/")
        for m in members:
            source = tar.extractfile(m)
            if source is not None:
                (dest / Path(m.name).name).write_bytes(source.read())
    return dest


def cache_dir() -> Path:
    return Path(os.environ.get("FLOPKB_CACHE_DIR", Path.home() / ".cache" / "flopkb"))


def _load_so(path: Path) -> Any:
    import torch  # noqa: F401  (the extension links against torch's libraries)

    loader = importlib.machinery.ExtensionFileLoader(NAME, str(path))
    spec = importlib.util.spec_from_file_location(NAME, str(path), loader=loader)
    if spec is None:
        raise PeerUnavailable(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


_MODULE: dict[str, Any] = {}


def build(search: list[Path], parts: tuple[str, ...] = ("fwd", "bwd")) -> tuple[Any, str]:
    """The compiled module (with `fwd` and `bwd`) and a description of what was built from."""
    if "module" in _MODULE:
        return _MODULE["module"], _MODULE["what"]
    prebuilt = os.environ.get("FLOPKB_MAMBA_EXT")
    try:
        if prebuilt:
            try:
                origin = f", from {find_sdist(search).name}"
            except PeerUnavailable:
                origin = ""
            module = _load_so(Path(prebuilt))
            what = f"prebuilt {Path(prebuilt).name} (FLOPKB_MAMBA_EXT{origin})"
        else:
            module, what = _compile(find_sdist(search), parts)
    except PeerUnavailable:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
        raise PeerUnavailable(f"Mamba's CUDA selective scan failed to build or load "
                              f"({type(exc).__name__}: {first[:300]})") from exc
    _MODULE.update(module=module, what=what)
    return module, what


def _compile(sdist: Path, parts: tuple[str, ...]) -> tuple[Any, str]:
    import torch
    from torch.utils.cpp_extension import load

    major, minor = torch.cuda.get_device_capability()
    arch = f"{major}{minor}"
    key = hashlib.sha256(f"{sdist.name}|{parts}|{arch}|{torch.__version__}".encode()).hexdigest()
    root = cache_dir() / "mamba_cuda" / key[:16]
    src = extract(sdist, root / "src")
    stubs = root / "src" / "flopkb_stubs.cu"
    stubs.write_text(stubs_source())
    sources = [src / "selective_scan.cpp", stubs,
               *(src / f for part in parts for f in BUILT[part])]
    build_dir = root / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
    module = load(name=NAME, sources=[str(s) for s in sources], extra_cflags=["-O3", "-std=c++17"],
                  extra_cuda_cflags=[*NVCC_FLAGS, f"-gencode=arch=compute_{arch},code=sm_{arch}"],
                  extra_include_paths=[str(src)], build_directory=str(build_dir), verbose=False)
    return module, f"built from {sdist.name} for sm_{arch} ({'+'.join(parts)})"


def scan_fn(module: Any) -> Callable:
    """selective_scan(u, delta, A, B, C, D, delta_bias, delta_softplus) -> y, differentiable:
    Mamba's own `fwd` and `bwd` entry points wrapped in an autograd Function. B and C come in
    the bundled kernels' [B, N, T] layout; Mamba's kernel takes them with a group axis,
    [B, 1, N, T] (a view, no copy)."""
    import torch

    class _MambaScan(torch.autograd.Function):
        @staticmethod
        def forward(ctx, u, delta, A, B, C, D, delta_bias, softplus):
            B4, C4 = B.unsqueeze(1), C.unsqueeze(1)
            out, x, *_ = module.fwd(u, delta, A, B4, C4, D, None, delta_bias, softplus)
            ctx.save_for_backward(u, delta, A, B4, C4, D, delta_bias, x)
            ctx.softplus = softplus
            return out

        @staticmethod
        def backward(ctx, dout):
            u, delta, A, B4, C4, D, delta_bias, x = ctx.saved_tensors
            du, ddelta, dA, dB, dC, dD, ddelta_bias, *_ = module.bwd(
                u, delta, A, B4, C4, D, None, delta_bias, dout.contiguous(), x, None, None,
                ctx.softplus, False)
            return (du, ddelta, dA, dB.squeeze(1), dC.squeeze(1), dD, ddelta_bias, None)

    def run(u, delta, A, B, C, D=None, delta_bias=None, delta_softplus=False):
        if not torch.is_grad_enabled() or not any(
                t is not None and t.requires_grad for t in (u, delta, A, B, C, D, delta_bias)):
            return module.fwd(u, delta, A, B.unsqueeze(1), C.unsqueeze(1), D, None, delta_bias,
                              delta_softplus)[0]
        return _MambaScan.apply(u, delta, A, B, C, D, delta_bias, delta_softplus)

    return run
