// Concurrency soak (a ctest test): T threads x N iterations of compile (cached), load,
// enumerate, launch through both APIs with results checked, and unload. No error allowed, and
// host RSS and device memory must be flat: measured after a warm-up, compared at the end.
//   usage: stress [threads=16] [iterations=1000]
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include "test_util.hpp"

static const char *kSrc =
    "extern \"C\" __global__ void bump(int *x, int by, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] += by;\n"
    "}\n"
    "extern \"C\" __global__ void other(int *x) { x[0] = 7; }\n";

static long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

static size_t device_used() {
  size_t free_b = 0, total = 0;
  CHECK_RT(cudaMemGetInfo(&free_b, &total));
  return total - free_b;
}

int main(int argc, char **argv) {
  require_gpu();
  const int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 1000;
  std::atomic<long> failures{0}, launches{0};
  std::atomic<bool> stop{false};
  auto worker = [&](int t, int count) {
    const int n = 256;
    int *d = nullptr;
    if (cudaMalloc(reinterpret_cast<void **>(&d), n * sizeof(int)) != cudaSuccess) { failures++; return; }
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    std::vector<int> h(n);
    for (int it = 0; it < count && !stop; ++it) {
      cudyn_api load_api = (it + t) % 2 ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
      cudyn_library_t lib = nullptr;
      if (cudyn_library_load_source(kSrc, "stress.cu", nullptr, 0, load_api, &lib, nullptr) != CUDYN_SUCCESS) {
        std::fprintf(stderr, "thread %d iter %d load: %s\n", t, it, cudyn_last_error_message());
        failures++; stop = true; break;
      }
      unsigned count_k = 0, written = 0;
      cudyn_kernel_t ks[4];
      if (cudyn_library_kernel_count(lib, &count_k) != CUDYN_SUCCESS || count_k != 2 ||
          cudyn_library_kernels(lib, ks, 4, &written) != CUDYN_SUCCESS || written != 2) {
        std::fprintf(stderr, "thread %d: enumeration gave %u/%u\n", t, count_k, written);
        failures++; stop = true;
      }
      cudyn_kernel_t k = nullptr;
      cudyn_library_get_kernel(lib, "bump", load_api, &k);
      cudaMemsetAsync(d, 0, n * sizeof(int), s);
      int by1 = t + 1, by2 = 1000, nn = n;
      void *a1[] = {&d, &by1, &nn};
      void *a2[] = {&d, &by2, &nn};
      cudyn_launch_config rt = config_1d(n, 128, CUDYN_API_RUNTIME, s);
      cudyn_launch_config drv = config_1d(n, 128, CUDYN_API_DRIVER, s);
      if (cudyn_launch(k, &rt, a1, 3) != CUDYN_SUCCESS || cudyn_launch(k, &drv, a2, 3) != CUDYN_SUCCESS) {
        std::fprintf(stderr, "thread %d iter %d launch: %s\n", t, it, cudyn_last_error_message());
        failures++; stop = true;
      }
      cudaMemcpyAsync(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, s);
      cudaStreamSynchronize(s);
      for (int i = 0; i < n; ++i)
        if (h[i] != by1 + by2) { std::fprintf(stderr, "thread %d iter %d: x[%d]=%d\n", t, it, i, h[i]); failures++; stop = true; break; }
      launches += 2;
      if (cudyn_library_unload(lib, load_api) != CUDYN_SUCCESS) { failures++; stop = true; }
    }
    cudaStreamDestroy(s);
    cudaFree(d);
  };
  // Warm-up: fill the cache, let allocators and the driver reach their steady state.
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(worker, t, 20);
    for (auto &x : ts) x.join();
  }
  CHECK_RT(cudaDeviceSynchronize());
  launches = 0;
  long rss0 = rss_kib();
  size_t dev0 = device_used();
  auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(worker, t, iters);
    for (auto &x : ts) x.join();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_RT(cudaDeviceSynchronize());
  long rss1 = rss_kib();
  size_t dev1 = device_used();
  cudyn_cache_info cs{};
  cudyn_cache_stats(&cs);
  std::printf("%d threads x %d iterations in %.1f s: %ld launches checked, %ld failures; cache hits %llu, misses %llu\n",
              threads, iters, secs, launches.load(), failures.load(), (unsigned long long)cs.hits, (unsigned long long)cs.misses);
  std::printf("host RSS %ld KiB -> %ld KiB (%+ld); device memory in use %.1f MiB -> %.1f MiB (%+.1f)\n", rss0, rss1, rss1 - rss0,
              dev0 / 1048576.0, dev1 / 1048576.0, ((double)dev1 - (double)dev0) / 1048576.0);
  EXPECT(failures == 0, "%ld failures", failures.load());
  EXPECT(launches == 2L * threads * iters, "launch count %ld", launches.load());
  // Flat: allow allocator noise (8 MiB host, 16 MiB device), far below what a per-iteration
  // leak of even one library or parameter table over this many iterations would cost.
  EXPECT(rss1 - rss0 < 8 * 1024, "host RSS grew by %ld KiB", rss1 - rss0);
  EXPECT((long long)dev1 - (long long)dev0 < 16LL << 20, "device memory grew by %lld bytes", (long long)dev1 - (long long)dev0);
  return 0;
}
