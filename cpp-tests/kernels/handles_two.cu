// One kernel "k" of two parameters: x[i] += 1. With handles_four.cu, two libraries whose
// kernel of one name has different layouts, for the address-reuse tests (handles_gpu.cu).
extern "C" __global__ void k(float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
