/* CUB from cudyn with no options: a BlockReduce + BlockScan kernel compiled at run time (the
 * CCCL headers are found beside NVRTC), cached on disk with a key over every header read,
 * loaded through the runtime, launched, checked. The compile and the cache hit run without a
 * GPU; loading and launching need one (exit 77 without). */
#include <cuda_runtime_api.h>
#include "example_util.h"

static const char *src =
    "#include <cub/block/block_reduce.cuh>\n"
    "#include <cub/block/block_scan.cuh>\n"
    "extern \"C\" __global__ void reduce_scan(const int *in, int *sums, int *scanned) {\n"
    "  using Reduce = cub::BlockReduce<int, 256>;\n"
    "  using Scan = cub::BlockScan<int, 256>;\n"
    "  __shared__ union { typename Reduce::TempStorage r; typename Scan::TempStorage s; } tmp;\n"
    "  int v = in[blockIdx.x * 256 + threadIdx.x];\n"
    "  int s = Reduce(tmp.r).Sum(v);\n"
    "  if (threadIdx.x == 0) sums[blockIdx.x] = s;\n"
    "  __syncthreads();\n"
    "  int out;\n"
    "  Scan(tmp.s).ExclusiveSum(v, out);\n"
    "  scanned[blockIdx.x * 256 + threadIdx.x] = out;\n"
    "}\n";

int main(void) {
  /* Twice: the second compile is a cache hit (the first may be one too, from an earlier run). */
  cudyn_cache_info before, after;
  if (cudyn_cache_status() != CUDYN_SUCCESS) {
    printf("the compile cache is off (%s): nothing to check about hits\n", cudyn_last_error_message());
  }
  for (int i = 0; i < 2; ++i) {
    cudyn_buffer cubin = {0};
    CHECK(cudyn_cache_stats(&before));
    CHECK(cudyn_compile(src, "cub_reduce.cu", NULL, 0, CUDYN_CODE_CUBIN, &cubin, NULL));
    CHECK(cudyn_cache_stats(&after));
    printf("compile %d: %zu bytes of cubin, %s\n", i + 1, cubin.size,
           after.hits > before.hits ? "a cache hit" : "compiled by NVRTC");
    cudyn_buffer_free(&cubin);
    if (i == 1 && after.enabled && after.hits <= before.hits) {
      fprintf(stderr, "the second identical CUB compile was not a cache hit\n");
      return 1;
    }
  }
  example_require_gpu("cub_reduce (compiled; loading and launching need a GPU)");

  cudyn_library_t lib;
  CHECK(cudyn_library_load_source(src, "cub_reduce.cu", NULL, 0, CUDYN_API_RUNTIME, &lib, NULL));
  cudyn_kernel_t k;
  CHECK(cudyn_library_get_kernel(lib, "reduce_scan", CUDYN_API_RUNTIME, &k));
  enum { BLOCKS = 64, N = BLOCKS * 256 };
  int *in = malloc(N * sizeof *in), *scanned = malloc(N * sizeof *scanned), sums[BLOCKS];
  for (int i = 0; i < N; ++i) in[i] = (i * 7919) % 13 - 6;
  int *din, *dsums, *dscanned;
  cudaMalloc((void **)&din, N * sizeof *in);
  cudaMalloc((void **)&dsums, sizeof sums);
  cudaMalloc((void **)&dscanned, N * sizeof *scanned);
  cudaMemcpy(din, in, N * sizeof *in, cudaMemcpyHostToDevice);
  void *args[] = {&din, &dsums, &dscanned};
  cudyn_launch_config cfg = {0};
  cfg.grid = (cudyn_dim3){BLOCKS, 1, 1};
  cfg.block = (cudyn_dim3){256, 1, 1};
  cfg.api = CUDYN_API_RUNTIME;
  CHECK(cudyn_launch(k, &cfg, args, 3));
  cudaMemcpy(sums, dsums, sizeof sums, cudaMemcpyDeviceToHost);
  cudaMemcpy(scanned, dscanned, N * sizeof *scanned, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int b = 0; b < BLOCKS; ++b) {
    int run = 0;
    for (int t = 0; t < 256; ++t) {
      bad += scanned[b * 256 + t] != run;
      run += in[b * 256 + t];
    }
    bad += sums[b] != run;
  }
  printf("CUB BlockReduce + BlockScan on %d blocks: %s\n", BLOCKS, bad ? "WRONG" : "every sum and prefix correct");
  cudaFree(din); cudaFree(dsums); cudaFree(dscanned);
  free(in); free(scanned);
  CHECK(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  return bad ? 1 : 0;
}
