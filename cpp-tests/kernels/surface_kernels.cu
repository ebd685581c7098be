// Device code for the surface suite (cpp-tests/surface_gpu.cu): launch attributes, occupancy,
// contexts, JIT options, interop. Built by nvcc into a fatbin and PTX; loaded through cudyn.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__device__ int g_out[4];

// out[i] = v for i < n.
extern "C" __global__ void fill(int *out, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}

// g_out[0] = v: for a thread that has no pointer of its own (the context test).
extern "C" __global__ void set_global(int v) {
  if (blockIdx.x == 0 && threadIdx.x == 0) g_out[0] = v;
}

// Each block writes the size of the cluster it ran in (the preferred-cluster test: the
// hardware picks the regular or the preferred shape per cluster).
extern "C" __global__ void cluster_sizes(unsigned *out) {
  cg::cluster_group c = cg::this_cluster();
  if (threadIdx.x == 0) out[blockIdx.x] = c.num_blocks();
}

// Sum with a grid-wide barrier: needs a cooperative launch.
extern "C" __global__ void coop_count(int *partial, int *out) {
  cg::grid_group g = cg::this_grid();
  if (threadIdx.x == 0) atomicAdd(partial, 1);
  g.sync();
  if (g.thread_rank() == 0) *out = *partial;
}

// The first of a programmatic pair: writes, then lets the next kernel start.
extern "C" __global__ void pdl_producer(int *buf, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = i + 1;
#if __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// The second: waits for the first's writes, then reads them.
extern "C" __global__ void pdl_consumer(const int *buf, int *sum, int n) {
#if __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, buf[i]);
}

// Dynamic shared memory of one int per thread: the occupancy tests size it.
extern "C" __global__ void smem_per_thread(int *out, int n) {
  extern __shared__ int s[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i;
  __syncthreads();
  if (i < n) out[i] = s[threadIdx.x] * 2;
}

// Many live values: its register count depends on the JIT options.
extern "C" __global__ void heavy(const float *in, float *out) {
  float acc[32];
  for (int j = 0; j < 32; ++j) acc[j] = in[(threadIdx.x + j * 31) % 256];
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 32; ++j) acc[j] = acc[j] * 0.5f + acc[(j + r + 1) % 32] * 0.25f + 1.0f;
  float s = 0.f;
  for (int j = 0; j < 32; ++j) s += acc[j];
  out[threadIdx.x] = s;
}

// A kernel with a required cluster shape (for the cluster occupancy queries).
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(int *out) {
  if (threadIdx.x == 0) out[blockIdx.x] = (int)cg::this_cluster().num_blocks();
}
