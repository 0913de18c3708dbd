"""The reductions (kernels/reduction): atomic and fixed-order sums against a float64 reference and
the determinism of the ordered one; CUB's determinism levels (cub.py: finding nvcc and the CCCL
headers, the build command and its cache, the one-line errors); the even-share partitioned sum
(D2); the scatter-add pair.

Bound: |sum - ref| <= (tree depth + partial count + 1) * 2^-24 * sum|x| (reference.sum_error_bound),
a worst-case fp32 bound, for both kernels. Bitwise checks compare `.view(torch.int32)`. The CUB
loader tests fake nvcc with a shell script; one test compiles cub_levels.cu for real when nvcc and
CCCL >= 3.1 headers are both present (else it skips), and the `gpu` test runs it.
"""

from __future__ import annotations

import itertools
import os
import stat
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from op_modules import op_modules, requires_cuda

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def red(kernels) -> SimpleNamespace:
    return op_modules("reduction", "atomic", "ordered", "reference", "cost")


def bits(t: torch.Tensor) -> int:
    return int(t.reshape(1).view(torch.int32).item())


@pytest.mark.parametrize("fn", ["atomic_sum", "ordered_sum"])
# 140_001 / 128 -> 1094 partials: more than FINAL_BLOCK, so pass 2 loops
@pytest.mark.parametrize(("n", "block"), [(1, 128), (20001, 8192), (140_001, 128)])
def test_sum_matches_reference(red, device, fn, n, block):
    x = torch.randn(n, device=device)
    module = red.atomic if fn == "atomic_sum" else red.ordered
    s = getattr(module, fn)(x, block=block)
    assert s.shape == () and s.dtype == torch.float32
    err = abs(s.double().item() - red.reference.sum_reference(x).item())
    assert err <= red.reference.sum_error_bound(x, block)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_accumulate_in_fp32(red, device, dtype):
    x = torch.randn(3001, 7, device=device).to(dtype)
    s = red.ordered.ordered_sum(x, block=1024)
    err = abs(s.item() - red.reference.sum_reference(x).item())
    assert err <= red.reference.sum_error_bound(x, 1024)


def test_ordered_sum_is_bitwise_repeatable(red, device):
    x = torch.randn(20_001, device=device)
    first = bits(red.ordered.ordered_sum(x, block=256))
    assert all(bits(red.ordered.ordered_sum(x, block=256)) == first for _ in range(3))


@pytest.mark.parametrize("fn", ["atomic_sum", "ordered_sum"])
def test_rejects_bad_input(red, fn):
    module = red.atomic if fn == "atomic_sum" else red.ordered
    with pytest.raises(ValueError, match="expected dtype"):
        getattr(module, fn)(torch.zeros(10, dtype=torch.int32))
    with pytest.raises(ValueError, match="non-empty"):
        getattr(module, fn)(torch.zeros(0))
    with pytest.raises(ValueError, match="contiguous"):
        getattr(module, fn)(torch.zeros(4, 4).t())
    with pytest.raises(ValueError, match="power of two"):
        getattr(module, fn)(torch.zeros(10), block=1000)


def test_cost(red):
    assert red.cost.flops(10) == 10
    assert red.cost.bytes_moved(10) == 44


@pytest.mark.gpu
@requires_cuda
def test_atomic_nondeterminism_is_observable_and_ordered_is_not(red):
    x = torch.randn(16 * 2**20, device="cuda")
    atomic = {bits(red.atomic.atomic_sum(x)) for _ in range(100)}
    ordered = {bits(red.ordered.ordered_sum(x)) for _ in range(100)}
    assert len(ordered) == 1
    assert len(atomic) > 1


@pytest.fixture(scope="module")
def cub(kernels):
    return load_op("reduction", "cub")


@pytest.fixture(scope="module")
def part(kernels):
    return load_op("reduction", "partitioned")


def _headers(root: Path, version: int = 300600) -> Path:
    folder = root / "include"
    (folder / "cub").mkdir(parents=True)
    (folder / "cub" / "version.cuh").write_text(f"#define CUB_VERSION {version} // x\n")
    return folder


def _fake_nvcc(root: Path, *, fail: bool = False) -> Path:
    """A stand-in nvcc: `--version` prints a build line; a build writes `-o`'s file and logs it."""
    home = root / "cuda"
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    build = ('echo "x.cu(3): error: no instance of DeviceReduce::Sum" >&2; exit 2' if fail else
             'out=""; prev=""; for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done;'
             ' echo built >> "$(dirname "$0")/calls"; echo lib > "$out"')
    nvcc.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Cuda compilation tools";'
                    f' echo "Build cuda_13.0.fake"; exit 0; fi\n{build}\n')
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IEXEC)
    return home


def test_nvcc_from_cuda_home_then_path(cub, tmp_path):
    home = _fake_nvcc(tmp_path)
    assert cub.find_nvcc({"CUDA_HOME": str(home), "PATH": ""}) == home / "bin" / "nvcc"
    assert cub.find_nvcc({"PATH": str(home / "bin")}) == home / "bin" / "nvcc"
    with pytest.raises(cub.CubUnavailable, match=r"^nvcc not found: set CUDA_HOME"):
        cub.find_nvcc({"CUDA_HOME": str(tmp_path / "nothing"), "PATH": str(tmp_path)})


def test_headers_from_the_env_var_or_the_wheel(cub, tmp_path, monkeypatch):
    given = _headers(tmp_path / "given")
    assert cub.find_cccl_include({"FLOPKB_CCCL_INCLUDE": str(given)}) == given
    with pytest.raises(cub.CubUnavailable, match=r"holds no cub/version\.cuh"):
        cub.find_cccl_include({"FLOPKB_CCCL_INCLUDE": str(tmp_path)})
    wheel = tmp_path / "site" / "cuda" / "cccl"
    _headers(wheel / "headers")
    spec = types.SimpleNamespace(submodule_search_locations=[str(wheel)])
    monkeypatch.setattr(cub.importlib.util, "find_spec",
                        lambda name: spec if name == "cuda.cccl" else None)
    assert cub.find_cccl_include({}) == wheel / "headers" / "include"
    monkeypatch.setattr(cub.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(cub.CubUnavailable, match=r"^CCCL >= 3\.1 headers not found: pip install"):
        cub.find_cccl_include({})


def test_headers_older_than_3_1_are_refused(cub, tmp_path):
    assert cub.header_version(_headers(tmp_path / "new")) == 300600
    # CUDA 13.0's own CCCL: no determinism levels
    with pytest.raises(cub.CubUnavailable, match=r"are 3\.0\.1: the determinism levels need 3\.1"):
        cub.header_version(_headers(tmp_path / "old", 300001))


def test_build_command_puts_the_wheel_headers_first_and_targets_the_device(cub, tmp_path):
    cmd = cub.build_command(Path("/cuda/bin/nvcc"), Path("/wheel/include"), (9, 0),
                            tmp_path / "lib.so")
    assert cmd[:6] == ["/cuda/bin/nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC"]
    assert cmd[6:8] == ["-I", "/wheel/include"]
    assert cmd[8:12] == ["-gencode", "arch=compute_90,code=sm_90",
                         "-gencode", "arch=compute_90,code=compute_90"]
    assert cmd[-1] == str(cub.SOURCE) and cmd[-3:-1] == ["-o", str(tmp_path / "lib.so")]
    assert "arch=compute_120,code=sm_120" in cub.build_command(
        Path("nvcc"), Path("i"), (12, 0), tmp_path / "x")


def test_cache_key_follows_source_compiler_headers_and_target(cub):
    base = cub.cache_key(b"src", "nvcc 13.0", 300600, (9, 0))
    assert base == cub.cache_key(b"src", "nvcc 13.0", 300600, (9, 0))
    others = {cub.cache_key(b"src2", "nvcc 13.0", 300600, (9, 0)),
              cub.cache_key(b"src", "nvcc 13.1", 300600, (9, 0)),
              cub.cache_key(b"src", "nvcc 13.0", 300700, (9, 0)),
              cub.cache_key(b"src", "nvcc 13.0", 300600, (8, 0))}
    assert base not in others and len(others) == 4


def test_build_is_cached_and_atomic(cub, tmp_path):
    home = _fake_nvcc(tmp_path)
    env = {"CUDA_HOME": str(home), "FLOPKB_CCCL_INCLUDE": str(_headers(tmp_path / "h")),
           "FLOPKB_CACHE_DIR": str(tmp_path / "cache")}
    path, description = cub.build((9, 0), env)
    assert path.read_text() == "lib\n" and path.parent.parent == tmp_path / "cache" / "cub"
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert description.startswith("CUB 3.6.0 (") and "sm_90" in description
    assert "Build cuda_13.0.fake" in description
    again, _ = cub.build((9, 0), env)
    assert again == path and (home / "bin" / "calls").read_text() == "built\n"


def test_a_failed_build_is_one_line_and_leaves_nothing(cub, tmp_path):
    home = _fake_nvcc(tmp_path, fail=True)
    env = {"CUDA_HOME": str(home), "FLOPKB_CCCL_INCLUDE": str(_headers(tmp_path / "h")),
           "FLOPKB_CACHE_DIR": str(tmp_path / "cache")}
    with pytest.raises(cub.CubUnavailable) as info:
        cub.build((9, 0), env)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("nvcc failed on cub_levels.cu: x.cu(3): error: no instance")
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]


def test_load_without_cuda_says_so(cub, monkeypatch):
    monkeypatch.setattr(cub.torch.cuda, "is_available", lambda: False)
    with pytest.raises(cub.CubUnavailable, match="no CUDA device"):
        cub.load()


def _real_toolchain(cub) -> dict[str, str] | None:
    try:
        include = cub.find_cccl_include()
        cub.header_version(include)
        cub.find_nvcc()
    except cub.CubUnavailable:
        return None
    return dict(os.environ)


@pytest.mark.slow
def test_cub_levels_compiles_for_hopper(cub, tmp_path):
    env = _real_toolchain(cub)
    if env is None:
        pytest.skip("needs nvcc and CCCL >= 3.1 headers (pip install cuda-cccl)")
    env["FLOPKB_CACHE_DIR"] = str(tmp_path)
    path, _ = cub.build((9, 0), env)
    import ctypes

    lib = ctypes.CDLL(str(path))
    assert lib.flopkb_cub_version() >= cub.MIN_CUB_VERSION
    lib.flopkb_cub_sum.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                                   ctypes.c_int, ctypes.c_void_p]
    lib.flopkb_cub_error_string.restype = ctypes.c_char_p
    # argument errors are answered before any CUDA call, so they run without a GPU
    invalid = 1  # cudaErrorInvalidValue
    assert lib.flopkb_cub_sum(None, None, 0, 1, None) == invalid
    assert lib.flopkb_cub_sum(None, None, 10, 3, None) == invalid
    assert lib.flopkb_cub_error_string(invalid) == b"invalid argument"


def test_levels_are_named(cub):
    assert cub.LEVELS == {"not_guaranteed": 0, "run_to_run": 1, "gpu_to_gpu": 2}
    with pytest.raises(ValueError, match="expected level in"):
        cub._level_code("bitwise")


@pytest.mark.gpu
@requires_cuda
def test_cub_levels_run_and_the_deterministic_ones_repeat(cub, kernels):
    reference = load_op("reduction", "reference")
    levels = cub.load()
    x = torch.randn(16 * 2**20, device="cuda")
    seen = {}
    for level in cub.LEVELS:
        out = levels.sum(x, level)
        err = abs(out.double().item() - reference.sum_reference(x).item())
        assert err <= reference.sum_error_bound(x, 4096), level
        seen[level] = {bits(levels.sum(x, level)) for _ in range(20)}
    assert len(seen["run_to_run"]) == 1
    assert len(seen["gpu_to_gpu"]) == 1


# ----- the even-share partition (D2) -----


def test_grid_follows_the_sm_count_until_tiles_run_out(part):
    # 64M fp32 = 16384 tiles of 4096: every KB part's grid (8 * 5 * SMs) is below that
    assert part.grid_for(64 * 2**20, 132) == 5280
    assert part.grid_for(64 * 2**20, 108) == 4320
    assert part.grid_for(1 * 2**20, 132) == 256
    with pytest.raises(ValueError, match="sm_count >= 1"):
        part.grid_for(10, 0)


@pytest.mark.parametrize(("n", "parts"), [(100_000, 7), (4096 * 10, 10), (5, 1), (81_921, 21)])
def test_shares_cover_the_input_evenly(part, n, parts):
    ranges = part.shares(n, parts, tile=4096)
    assert len(ranges) == parts and ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    sizes = [(e - s + 4095) // 4096 for s, e in ranges]
    assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("parts", [1, 3, 20, 49])
def test_partitioned_sum_matches_reference_and_repeats(part, device, parts):
    reference = load_op("reduction", "reference")
    x = torch.randn(200_003, device=device)
    s = part.partitioned_sum(x, parts, tile=4096)
    assert s.shape == () and s.dtype == torch.float32
    err = abs(s.double().item() - reference.sum_reference(x).item())
    assert err <= reference.sum_error_bound(x, 4096)
    assert bits(part.partitioned_sum(x, parts, tile=4096)) == bits(s)


def test_partition_count_changes_the_bits(part, device):
    x = torch.randn(98_304, device=device)
    results = {bits(part.partitioned_sum(x, p, tile=512)) for p in range(60, 192, 11)}
    assert len(results) > 1


def test_partitioned_sum_rejects_bad_parts(part):
    with pytest.raises(ValueError, match=r"expected 1 <= parts <= 3"):
        part.partitioned_sum(torch.zeros(10_000), 4, tile=4096)
    with pytest.raises(ValueError, match="expected dtype"):
        part.partitioned_sum(torch.zeros(10, dtype=torch.int32), 1)


@pytest.mark.parametrize("deterministic", [False, True])
def test_scatter_add_matches_the_float64_scatter(kernels, deterministic):
    # 5003 values into 37 bins (odd sizes): every bin collides ~135 times
    scatter, ref = load_op("reduction", "scatter"), load_op("reduction", "reference")
    g = torch.Generator().manual_seed(0)
    src = torch.randn(5003, generator=g)
    index = torch.randint(0, 37, (5003,), generator=g)
    got = scatter.scatter_add(src, index, 37, deterministic)
    want = ref.scatter_add_reference(src, index, 37)
    assert got.dtype == torch.float32 and want.dtype == torch.float64
    assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-4)
    assert load_op("reduction", "cost").scatter_bytes(5003, 37) == 5003 * 12 + 8 * 37
