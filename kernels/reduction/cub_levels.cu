// CUB's single-phase cub::DeviceReduce::Sum at CCCL's three determinism levels (claims D1-D3),
// behind a plain C ABI so that Python loads it with ctypes (no torch extension, no pybind).
//
// Built by kernels/reduction/cub.py against the CCCL 3.x headers of the `cuda-cccl` wheel, put
// first on the include path: the env overload of DeviceReduce::Sum and
// cuda::execution::determinism arrived in CCCL 3.1, and a CUDA 13.0 toolkit ships CCCL 3.0.
//
// What each level runs (cub/device/device_reduce.cuh, CCCL 3.6):
//   not_guaranteed: one kernel, block partials atomically added into *out (fp32 atomics, in
//                   whatever order blocks finish), used because float + plus + contiguous output
//                   + output type == accumulator type all hold here;
//   run_to_run:     the default two-pass tree; the grid is min(tiles, occupancy * SMs * 5)
//                   even shares, so the combining order follows the part's SM count;
//   gpu_to_gpu:     the Reproducible Floating-point Accumulator (RFA); only float/double with
//                   cuda::std::plus take this path (other types or operators either fall back to
//                   run_to_run or fail to compile), so the sum here is float + plus on purpose.
//
// The single-phase API sizes and allocates its temporary storage itself (cudaMallocAsync /
// cudaFreeAsync on the env's stream) inside every call: callers time it with device events, as a
// user of the API gets it, not as a graph replay.

#include <cub/device/device_reduce.cuh>
#include <cub/version.cuh>
#include <cuda/execution.determinism.h>
#include <cuda/execution.require.h>
#include <cuda/std/execution>
#include <cuda/stream_ref>

#include <cuda_runtime.h>

#if CUB_VERSION < 300100
#  error "CCCL >= 3.1 headers are needed (determinism levels); put the cuda-cccl wheel's headers first"
#endif

namespace
{
template <class Level>
cudaError_t sum_at(const float* in, float* out, long long n, Level level, cudaStream_t stream)
{
  const auto env = ::cuda::std::execution::env{::cuda::stream_ref{stream}, ::cuda::execution::require(level)};
  return cub::DeviceReduce::Sum(in, out, static_cast<::cuda::std::int64_t>(n), env);
}
} // namespace

extern "C" {

// Level codes, shared with cub.py: 0 not_guaranteed, 1 run_to_run, 2 gpu_to_gpu.
// Returns the cudaError_t of the call (cudaErrorInvalidValue for a bad level or n < 1).
int flopkb_cub_sum(const float* in, float* out, long long n, int level, void* stream)
{
  if (n < 1)
  {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  const auto s = static_cast<cudaStream_t>(stream);
  switch (level)
  {
    case 0:
      return static_cast<int>(sum_at(in, out, n, ::cuda::execution::determinism::not_guaranteed, s));
    case 1:
      return static_cast<int>(sum_at(in, out, n, ::cuda::execution::determinism::run_to_run, s));
    case 2:
      return static_cast<int>(sum_at(in, out, n, ::cuda::execution::determinism::gpu_to_gpu, s));
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}

// CUB_VERSION of the headers this library was compiled against (e.g. 300600 for 3.6.0).
int flopkb_cub_version()
{
  return CUB_VERSION;
}

// The runtime's message for an error code returned by flopkb_cub_sum.
const char* flopkb_cub_error_string(int code)
{
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

} // extern "C"
