// One kernel "k" of four parameters: c = a + b (see handles_two.cu).
extern "C" __global__ void k(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
