"""CUB's `cub::DeviceReduce::Sum` at CCCL's determinism levels, built on first use (claims D1-D3).

`cub_levels.cu` (ours) calls CUB's single-phase Sum with
`cuda::execution::require(cuda::execution::determinism::{not_guaranteed, run_to_run, gpu_to_gpu})`
and exports a C ABI; this module compiles it with nvcc against the CCCL 3.x headers of the
`cuda-cccl` wheel and loads it with ctypes. Nothing of CCCL is copied or committed.

- nvcc: `$CUDA_HOME/bin/nvcc`, else the one on PATH.
- headers: `$FLOPKB_CCCL_INCLUDE`, else `cuda/cccl/headers/include` of the installed `cuda-cccl`
  (found with importlib.util.find_spec, never imported: its package needs cuda.bindings). They go
  FIRST on the include path: the toolkit carries an older CCCL (3.0 in CUDA 13.0) that lacks the
  determinism levels (CCCL 3.1).
- cache: `$FLOPKB_CACHE_DIR` (default `~/.cache/flopkb`)/cub/<key>/, key = hash of the source,
  the nvcc version, the headers' version and the target; built into a temp file and renamed, so
  concurrent builders never see half a library.

A missing nvcc or missing headers raise `CubUnavailable` with one line saying what is missing; a
failed compile raises it with the compiler's first error line.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("cub_levels.cu")
# The codes cub_levels.cu switches on.
LEVELS = {"not_guaranteed": 0, "run_to_run": 1, "gpu_to_gpu": 2}
# CCCL 3.1 brought the env overload of DeviceReduce::Sum and cuda::execution::determinism.
MIN_CUB_VERSION = 300100
FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC")
BUILD_TIMEOUT_S = 600
_LIB_NAME = "libflopkb_cub_levels.so"


class CubUnavailable(RuntimeError):
    """CUB's levels cannot be built or loaded here; the message is one line saying why."""


def find_nvcc(env: dict[str, str] | None = None) -> Path:
    """`$CUDA_HOME/bin/nvcc` (or `$CUDA_PATH`), else nvcc on PATH."""
    env = os.environ if env is None else env
    for var in ("CUDA_HOME", "CUDA_PATH"):
        home = env.get(var)
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return Path(home) / "bin" / "nvcc"
    found = shutil.which("nvcc", path=env.get("PATH"))
    if found:
        return Path(found)
    raise CubUnavailable("nvcc not found: set CUDA_HOME to a CUDA toolkit or put nvcc on PATH")


def find_cccl_include(env: dict[str, str] | None = None) -> Path:
    """The CCCL headers folder: `$FLOPKB_CCCL_INCLUDE`, else the `cuda-cccl` wheel's."""
    env = os.environ if env is None else env
    given = env.get("FLOPKB_CCCL_INCLUDE")
    if given:
        folder = Path(given)
        if not (folder / "cub" / "version.cuh").is_file():
            raise CubUnavailable(f"FLOPKB_CCCL_INCLUDE={given} holds no cub/version.cuh")
        return folder
    try:
        spec = importlib.util.find_spec("cuda.cccl")
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "headers" / "include"
        if (folder / "cub" / "version.cuh").is_file():
            return folder
    raise CubUnavailable(
        "CCCL >= 3.1 headers not found: pip install cuda-cccl, or set FLOPKB_CCCL_INCLUDE to a "
        "cuda/cccl/headers/include folder"
    )


def header_version(include: Path) -> int:
    """CUB_VERSION of a headers folder (e.g. 300600 for CCCL 3.6.0); CubUnavailable below 3.1."""
    text = (include / "cub" / "version.cuh").read_text(encoding="utf-8", errors="replace")
    match = re.search(r"#define\s+CUB_VERSION\s+(\d+)", text)
    if match is None:
        raise CubUnavailable(f"{include}/cub/version.cuh defines no CUB_VERSION")
    version = int(match.group(1))
    if version < MIN_CUB_VERSION:
        raise CubUnavailable(
            f"CCCL headers at {include} are {version_text(version)}: the determinism levels need "
            "3.1 or later (pip install -U cuda-cccl)"
        )
    return version


def version_text(cub_version: int) -> str:
    """300600 -> '3.6.0'."""
    return f"{cub_version // 100000}.{cub_version // 100 % 1000}.{cub_version % 100}"


def nvcc_version(nvcc: Path) -> str:
    """The last line of `nvcc --version` (e.g. 'Build cuda_13.0.r13.0/compiler.36424714_0')."""
    try:
        done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CubUnavailable(f"{nvcc} --version failed: {exc}") from exc
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise CubUnavailable(f"{nvcc} --version failed (exit {done.returncode})")
    return lines[-1].strip()


def arch_flags(capability: tuple[int, int]) -> list[str]:
    """SASS for the device's compute capability plus PTX of it (JIT fallback for newer parts)."""
    arch = f"{capability[0]}{capability[1]}"
    return ["-gencode", f"arch=compute_{arch},code=sm_{arch}",
            "-gencode", f"arch=compute_{arch},code=compute_{arch}"]


def build_command(nvcc: Path, include: Path, capability: tuple[int, int], out: Path,
                  source: Path = SOURCE) -> list[str]:
    """The nvcc command line; the wheel's headers come before every default include path."""
    return [str(nvcc), *FLAGS, "-I", str(include), *arch_flags(capability), "-o", str(out),
            str(source)]


def cache_dir(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("FLOPKB_CACHE_DIR") or Path.home() / ".cache" / "flopkb") / "cub"


def cache_key(source: bytes, compiler: str, cub_version: int, capability: tuple[int, int]) -> str:
    digest = hashlib.sha256(source)
    for part in (compiler, str(cub_version), f"{capability[0]}.{capability[1]}", " ".join(FLAGS)):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()[:20]


def _first_error(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else "no compiler output"


def build(capability: tuple[int, int], env: dict[str, str] | None = None) -> tuple[Path, str]:
    """Compile cub_levels.cu for `capability` unless cached; returns (library, description)."""
    nvcc = find_nvcc(env)
    include = find_cccl_include(env)
    cub_version = header_version(include)
    compiler = nvcc_version(nvcc)
    key = cache_key(SOURCE.read_bytes(), compiler, cub_version, capability)
    folder = cache_dir(env) / key
    target = folder / _LIB_NAME
    if not target.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=folder)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            try:
                done = subprocess.run(build_command(nvcc, include, capability, tmp),
                                      capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                                      check=False)
            except subprocess.TimeoutExpired as exc:
                raise CubUnavailable(f"nvcc took over {BUILD_TIMEOUT_S} s building "
                                     f"{SOURCE.name}") from exc
            if done.returncode != 0:
                raise CubUnavailable(f"nvcc failed on {SOURCE.name}: {_first_error(done.stderr)}")
            os.chmod(tmp, 0o755)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target, describe(cub_version, compiler, capability)


def describe(cub_version: int, compiler: str, capability: tuple[int, int]) -> str:
    try:
        wheel = f"cuda-cccl {metadata.version('cuda-cccl')}"
    except metadata.PackageNotFoundError:
        wheel = "FLOPKB_CCCL_INCLUDE headers"
    return (f"CUB {version_text(cub_version)} ({wheel}) cub::DeviceReduce::Sum single-phase with "
            f"cuda::execution::require(determinism::<level>), built by nvcc ({compiler}) for "
            f"sm_{capability[0]}{capability[1]}")


@dataclass(frozen=True)
class CubLevels:
    """The loaded library: `sum(x, level)` and what it is (`description`, `cub_version`)."""

    path: Path
    description: str
    cub_version: int
    _lib: ctypes.CDLL

    def sum(self, x: torch.Tensor, level: str, *, out: torch.Tensor | None = None) -> torch.Tensor:
        """0-dim fp32 sum of x (contiguous CUDA fp32) at `level`, on torch's current stream."""
        code = _level_code(level)
        _check(x)
        if out is None:
            out = torch.empty((), dtype=torch.float32, device=x.device)
        stream = torch.cuda.current_stream(x.device).cuda_stream
        err = self._lib.flopkb_cub_sum(ctypes.c_void_p(x.data_ptr()),
                                       ctypes.c_void_p(out.data_ptr()), x.numel(), code,
                                       ctypes.c_void_p(stream))
        if err != 0:
            message = self._lib.flopkb_cub_error_string(err).decode(errors="replace")
            raise RuntimeError(f"cub::DeviceReduce::Sum ({level}) failed: {message} ({err})")
        return out


def _level_code(level: str) -> int:
    if level not in LEVELS:
        raise ValueError(f"expected level in {sorted(LEVELS)}, got {level!r}")
    return LEVELS[level]


def _check(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"cub sum: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.float32:
        raise ValueError(f"cub sum: expected dtype torch.float32, got {x.dtype}")
    if x.device.type != "cuda":
        raise ValueError(f"cub sum: expected a CUDA tensor, got device {x.device}")
    if x.numel() == 0 or not x.is_contiguous():
        raise ValueError(f"cub sum: expected a non-empty contiguous tensor, got shape "
                         f"{tuple(x.shape)} strides {x.stride()}")


_LOADED: dict[tuple[int, int], CubLevels] = {}


def load(device: torch.device | int | None = None) -> CubLevels:
    """Build (once, cached on disk) and load the library for `device`'s compute capability."""
    if not torch.cuda.is_available():
        raise CubUnavailable("no CUDA device: CUB's reductions run on a GPU only")
    capability = tuple(torch.cuda.get_device_capability(device))
    if capability not in _LOADED:
        path, description = build(capability)  # type: ignore[arg-type]
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as exc:
            raise CubUnavailable(f"cannot load {path}: {exc}") from exc
        lib.flopkb_cub_sum.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                                       ctypes.c_int, ctypes.c_void_p]
        lib.flopkb_cub_sum.restype = ctypes.c_int
        lib.flopkb_cub_version.restype = ctypes.c_int
        lib.flopkb_cub_error_string.argtypes = [ctypes.c_int]
        lib.flopkb_cub_error_string.restype = ctypes.c_char_p
        _LOADED[capability] = CubLevels(path, description, int(lib.flopkb_cub_version()), lib)
    return _LOADED[capability]
