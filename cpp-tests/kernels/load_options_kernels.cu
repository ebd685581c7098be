// Device code for load_options_gpu.cu: a kernel that keeps many values live (so a register
// limit changes its register count), and a __managed__ variable a kernel updates.
__managed__ int managed_counter;
__device__ float device_value;

extern "C" __global__ void many_registers(const float *in, float *out, int n) {
  float acc[48];
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = in[(threadIdx.x + j * 97) % n];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = acc[j] * 0.5f + acc[(j + r + 1) % 48] * 0.25f + 1.0f;
  float s = 0;
#pragma unroll
  for (int j = 0; j < 48; ++j) s += acc[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" __global__ void bump_managed(int by) { atomicAdd(&managed_counter, by); }
extern "C" __global__ void read_device_value(float *out) { *out = device_value; }
