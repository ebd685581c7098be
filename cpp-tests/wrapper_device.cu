// Device code for wrapper_gpu's from_file / from_data checks, built by nvcc into a fatbin.
__device__ float bias = 0.25f;

extern "C" __global__ void scale(float* x, float alpha, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= alpha;
}

extern "C" __global__ void scale_add_bias(float* x, float alpha, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * alpha + bias;
}
