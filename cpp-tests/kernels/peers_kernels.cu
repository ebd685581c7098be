// Device code for the C++-name lookup and preload tests (tests/cxx_names.rs and
// tests/peers.rs on the CPU, cpp-tests/peers_gpu.cpp and peers_gpu.c on a GPU): templates over
// several types, overloads, namespaces, an anonymous namespace, default template arguments, a
// versioned inline namespace (libcu++), and one extern "C" kernel. Built by nvcc into a
// fatbin; only axpy<float> and plain are launched. peers_y is memory for tests that have no
// allocator of their own (the Rust one).
#include <cstdint>
#include <cuda/std/complex>

template <class T>
__global__ void axpy(T* y, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a;
}
template __global__ void axpy<float>(float*, float, int);
template __global__ void axpy<double>(double*, double, int);
template __global__ void axpy<unsigned int>(unsigned int*, unsigned int, int);
template __global__ void axpy<std::int64_t>(std::int64_t*, std::int64_t, int);
template __global__ void axpy<long long>(long long*, long long, int);

// A second axpy<float> in a namespace: the global one is the closer match for "axpy<float>".
namespace other {
template <class T>
__global__ void axpy(T* y, T a, int n) {
  if (n > 0) y[0] = a;
}
template __global__ void axpy<float>(float*, float, int);
template __global__ void axpy<short>(short*, short, int);
}  // namespace other

__global__ void scale(float* x, float a) { x[0] *= a; }
__global__ void scale(double* x, double a) { x[0] *= a; }

namespace ns {
namespace inner {
template <class T, int N = 4>
__global__ void fill(T* p, T v) { p[N] = v; }
template __global__ void fill<float>(float*, float);
template __global__ void fill<float, 8>(float*, float);
struct Pair {
  int a;
  float b;
};
__global__ void take(Pair p, const Pair* q) {}
}  // namespace inner
}  // namespace ns

namespace {
__global__ void hidden(int* p) { *p = 2; }
}  // namespace
void* keep_hidden() { return reinterpret_cast<void*>(hidden); }

template <unsigned N>
__global__ void sized(int (*a)[N]) {}
template __global__ void sized<16u>(int (*)[16]);
template <bool B>
__global__ void flag(int* p) {}
template __global__ void flag<true>(int*);
template <int N>
__global__ void neg(int* p) {}
template __global__ void neg<-3>(int*);

template <class T>
__global__ void cx(T* p) {}
template __global__ void cx<cuda::std::complex<float>>(cuda::std::complex<float>*);

__managed__ float peers_y[256];

extern "C" __global__ void plain(int* p, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) *p = v;
}
