// vecmath.hpp: a tiny header-only GPU math library built on cudyn.hpp.
//
// Its kernels ship as CUDA C++ source inside this header and are compiled with NVRTC on first
// use (through cudyn's on-disk cache, so later runs skip the compiler), then kept in a
// function-local static for the life of the program. A program using it needs no nvcc, no
// CUDA header and no CUDA library at build time: it links cudyn alone.
//
// Loading and launching go through the CUDA driver (api::driver), so at run time only the
// driver (libcuda.so.1) and NVRTC are needed, not the CUDA runtime.
//
// Pointers are device memory the caller owns (cudaMalloc, cuMemAlloc, ...). Every function is
// asynchronous on `stream` (nullptr: the legacy default stream) and returns a
// cudyn::result<void>: check ok(), or call .value() to throw cudyn::error (with exceptions;
// without, it aborts with the message). Works with and without -fno-exceptions.
#ifndef VECMATH_HPP
#define VECMATH_HPP

#include <cstddef>
#include <cstdint>

#include "cudyn.hpp"

namespace vecmath {

namespace detail {

inline constexpr const char* source = R"(
extern "C" __global__ void vecmath_scale(float* x, float alpha, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] *= alpha;
}
extern "C" __global__ void vecmath_axpy(float alpha, const float* x, float* y, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
extern "C" __global__ void vecmath_iota(float* x, float start, float step, unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] = start + step * (float)i;
}
)";

/// The compiled module: its library (owned here, for the life of the program) and kernels, or
/// why it could not be had.
struct module {
  cudyn::library lib;
  cudyn::kernel scale, axpy, iota;
  cudyn::error_info error;
};

inline module load() {
  module m;
  auto lib = cudyn::library::try_from_source(source, cudyn::source_options{"-std=c++17"}.program_name("vecmath.cu"),
                                             cudyn::api::driver);
  if (!lib) {
    m.error = lib.error_details();
    return m;
  }
  m.lib = std::move(*lib);
  auto s = m.lib.try_kernel("vecmath_scale");
  auto a = m.lib.try_kernel("vecmath_axpy");
  auto i = m.lib.try_kernel("vecmath_iota");
  for (const cudyn::error_info* e : {&s.error_details(), &a.error_details(), &i.error_details()})
    if (!e->ok()) {
      m.error = *e;
      return m;
    }
  m.scale = *s;
  m.axpy = *a;
  m.iota = *i;
  return m;
}

/// Compiled once, on first use, thread-safely (a function-local static).
inline const module& get() {
  static const module m = load();
  return m;
}

/// Grid-stride launch: enough blocks to cover n, capped; the kernels loop over the rest.
inline cudyn::launch_config config(std::size_t n, cudyn_stream_t stream) {
  const std::uint32_t block = 256;
  std::size_t blocks = (n + block - 1) / block;
  if (blocks == 0) blocks = 1;
  if (blocks > 65535) blocks = 65535;
  return cudyn::launch_config()
      .grid(static_cast<std::uint32_t>(blocks))
      .block(block)
      .stream(stream)
      .api(cudyn::api::driver);
}

}  // namespace detail

/// Compile and load the kernels now rather than at the first call.
inline cudyn::result<void> init() {
  const detail::module& m = detail::get();
  if (!m.error.ok()) return m.error;
  return cudyn::result<void>();
}

/// x[i] *= alpha, for i < n.
inline cudyn::result<void> scale(float* d_x, std::size_t n, float alpha, cudyn_stream_t stream = nullptr) {
  const detail::module& m = detail::get();
  if (!m.error.ok()) return m.error;
  return m.scale.try_launch(detail::config(n, stream), d_x, alpha, static_cast<unsigned long long>(n));
}

/// y[i] = alpha * x[i] + y[i], for i < n.
inline cudyn::result<void> axpy(float alpha, const float* d_x, float* d_y, std::size_t n,
                                cudyn_stream_t stream = nullptr) {
  const detail::module& m = detail::get();
  if (!m.error.ok()) return m.error;
  return m.axpy.try_launch(detail::config(n, stream), alpha, d_x, d_y, static_cast<unsigned long long>(n));
}

/// x[i] = start + step * i, for i < n.
inline cudyn::result<void> iota(float* d_x, std::size_t n, float start = 0.0f, float step = 1.0f,
                                cudyn_stream_t stream = nullptr) {
  const detail::module& m = detail::get();
  if (!m.error.ok()) return m.error;
  return m.iota.try_launch(detail::config(n, stream), d_x, start, step, static_cast<unsigned long long>(n));
}

}  // namespace vecmath

#endif  // VECMATH_HPP
