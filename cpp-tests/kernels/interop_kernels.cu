// Device code for the interop suite and the examples. Built by nvcc into a fatbin, a cubin
// and PTX at build time; the tests load those files at run time through cudyn.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

struct ScaleParams {  // passed by value: 16 bytes, alignment 8
  float scale;
  int offset;
  double bias;
};

extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void add_one(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

extern "C" __global__ void scale_struct(float *x, ScaleParams p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (float)(x[i] * p.scale + p.offset + p.bias);
}

__device__ float g_factor;

extern "C" __global__ void read_global(float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = g_factor * (float)i;
}

// Writes the cluster shape it was launched with, as seen from the device.
extern "C" __global__ void cluster_report(unsigned *out) {
  cg::cluster_group c = cg::this_cluster();
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0) {
    dim3 d = c.dim_blocks();
    out[0] = d.x;
    out[1] = d.y;
    out[2] = d.z;
    out[3] = c.num_blocks();
  }
}

// Sum with a grid-wide barrier: needs a cooperative launch.
extern "C" __global__ void coop_sum(const float *in, float *partial, float *out, int n) {
  cg::grid_group g = cg::this_grid();
  float s = 0.f;
  for (int i = (int)g.thread_rank(); i < n; i += (int)g.size()) s += in[i];
  atomicAdd(&partial[blockIdx.x], s);
  g.sync();
  if (g.thread_rank() == 0) {
    float t = 0.f;
    for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
    *out = t;
  }
}

extern "C" __global__ void empty_kernel() {}

// Uses dynamic shared memory: copies through it so a too-small allocation would fault.
extern "C" __global__ void smem_copy(const float *in, float *out, int n) {
  extern __shared__ float buf[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[threadIdx.x] = in[i];
  __syncthreads();
  if (i < n) out[i] = buf[threadIdx.x] * 2.0f;
}
