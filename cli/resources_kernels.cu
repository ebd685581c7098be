// Kernels with registers, static shared memory, local memory, constant memory and a launch
// bound, for ctest cli.resources: what `cudyn inspect` reads from the cubin's tables against
// what CUDA reports for the loaded kernel.
__constant__ float coeffs[64];
__device__ float table[128];

extern "C" __global__ void __launch_bounds__(256) with_shared(float *out, int n) {
  __shared__ float tile[512];
  tile[threadIdx.x] = out[threadIdx.x] * coeffs[threadIdx.x % 64];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 256] + table[n % 128];
}

extern "C" __global__ void with_local(float *out, int n) {
  float buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = out[i * n];
  out[threadIdx.x] = buf[n & 255] + buf[(n * 7) & 255];
}

extern "C" __global__ void plain(float *out) { out[threadIdx.x] += 1.0f; }
