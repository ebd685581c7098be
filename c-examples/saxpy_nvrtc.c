/* The NVRTC SAXPY: compile CUDA C++ at run time through cudyn (NVRTC, cached), load it
 * through the CUDA runtime, launch it through the runtime, check every element.
 * Without a GPU it compiles, reports what it made, and exits 77 (skipped) before loading. */
#include <cuda_runtime_api.h>
#include "example_util.h"

static const char *saxpy_src =
    "extern \"C\" __global__ void saxpy(float a, const float *x, float *y, size_t n) {\n"
    "  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

int main(void) {
  /* 1. Compile (no -arch: SASS for the present GPU, sm_90 without one). */
  cudyn_buffer cubin = {0}, log = {0};
  const char *opts[] = {"-default-device"};
  CHECK(cudyn_compile(saxpy_src, "saxpy.cu", opts, 1, CUDYN_CODE_CUBIN, &cubin, &log));
  cudyn_code_kind kind;
  CHECK(cudyn_code_kind_of(cubin.data, cubin.size, &kind));
  printf("compiled saxpy.cu: %zu bytes of %s%s%s\n", cubin.size, kind == CUDYN_CODE_CUBIN ? "cubin" : "?",
         log.size ? ", log: " : "", log.size ? (const char *)log.data : "");
  cudyn_buffer_free(&log);
  example_require_gpu("saxpy_nvrtc (compiled; loading and launching need a GPU)");

  /* 2. Load through the runtime, 3. launch through the runtime. */
  cudyn_library_t lib;
  CHECK(cudyn_library_load_data(cubin.data, cubin.size, CUDYN_API_RUNTIME, &lib));
  cudyn_buffer_free(&cubin);
  cudyn_kernel_t saxpy;
  CHECK(cudyn_library_get_kernel(lib, "saxpy", CUDYN_API_RUNTIME, &saxpy));

  enum { N = 1 << 22 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  unsigned seed = 7;
  for (size_t i = 0; i < N; ++i) { x[i] = example_rand(&seed); y[i] = example_rand(&seed); }
  float *dx, *dy;
  cudaMalloc((void **)&dx, N * sizeof *x);
  cudaMalloc((void **)&dy, N * sizeof *y);
  cudaMemcpy(dx, x, N * sizeof *x, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, N * sizeof *y, cudaMemcpyHostToDevice);
  float a = 2.5f;
  size_t n = N;
  void *args[] = {&a, &dx, &dy, &n};
  size_t sizes[] = {sizeof a, sizeof dx, sizeof dy, sizeof n};
  cudyn_launch_config cfg = {0};
  cfg.grid = (cudyn_dim3){(N + 255) / 256, 1, 1};
  cfg.block = (cudyn_dim3){256, 1, 1};
  cfg.api = CUDYN_API_RUNTIME;
  CHECK(cudyn_launch_checked(saxpy, &cfg, args, sizes, 4));
  cudaMemcpy(out, dy, N * sizeof *out, cudaMemcpyDeviceToHost);
  size_t bad = 0;
  /* The GPU fuses a*x+y into one rounding; allow for the host's two. */
  for (size_t i = 0; i < N; ++i) {
    float ref = a * x[i] + y[i], diff = out[i] - ref;
    bad += (diff < 0 ? -diff : diff) > 1e-6f * (1.0f + (ref < 0 ? -ref : ref));
  }
  printf("saxpy on %d elements through the runtime: %s\n", N, bad ? "WRONG" : "every element correct");
  cudaFree(dx); cudaFree(dy);
  free(x); free(y); free(out);
  CHECK(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return bad ? 1 : 0;
}
