// Real-world images on the GPU: every fatbin or cubin in a folder (scripts/real_world_fatbins.py
// fills one from the `.nv_fatbin` sections of NVIDIA's own libraries) must load through cudyn,
// through both APIs, exactly when the raw driver loads it (or fail with NO_BINARY_FOR_DEVICE
// where the driver finds no code for the GPU): no false refusals. Then it measures the cost of a
// first-sight load (validation included) against the raw cuLibraryLoadData of the same bytes.
//
// First sight: the images are loaded in turn, all of them between two loads of the same one, so
// cudyn's memo of validated images (it recognises the last 8) never holds the image: every
// cudyn load validates it in full. Raw and cudyn loads alternate per image, the order flipping
// every round; each figure is the median over rounds of the load call alone (unload untimed).
//   usage: corpus_load <folder> [rounds=9]
// Exit status: 1 if any image is refused where the driver loads it, or loads where it fails.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <string>
#include <vector>
#include "../test_util.hpp"
#include "cudyn.h"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s <folder> [rounds]", argv[0]);
  require_gpu();
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  auto cuLibraryLoadData_ = DRIVER(cuLibraryLoadData);
  auto cuLibraryUnload_ = DRIVER(cuLibraryUnload);
  auto cuLibraryGetKernelCount_ = DRIVER(cuLibraryGetKernelCount, 12040);
  CHECK_RT(cudaFree(nullptr));

  std::vector<std::string> names;
  if (DIR *d = opendir(argv[1])) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) FAIL("no images in %s", argv[1]);
  std::vector<std::vector<char>> images;
  for (auto &n : names) images.push_back(read_file((std::string(argv[1]) + "/" + n).c_str()));

  // Verdicts: raw driver, cudyn driver, cudyn runtime.
  int false_verdicts = 0, loaded = 0, no_binary = 0;
  std::vector<bool> timed(images.size(), false);
  for (size_t i = 0; i < images.size(); ++i) {
    CUlibrary raw = nullptr;
    CUresult rr = cuLibraryLoadData_(&raw, images[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    unsigned raw_kernels = 0;
    if (rr == CUDA_SUCCESS) {
      cuLibraryGetKernelCount_(&raw_kernels, raw);
      cuLibraryUnload_(raw);
    }
    for (cudyn_api api : {CUDYN_API_DRIVER, CUDYN_API_RUNTIME}) {
      cudyn_library_t lib = nullptr;
      cudyn_status s = cudyn_library_load_data(images[i].data(), images[i].size(), api, &lib);
      bool ok = rr == CUDA_SUCCESS ? s == CUDYN_SUCCESS
                                   : (rr == CUDA_ERROR_NO_BINARY_FOR_GPU ? s == CUDYN_ERROR_NO_BINARY_FOR_DEVICE : s != CUDYN_SUCCESS);
      uint32_t n = 0;
      if (s == CUDYN_SUCCESS) {
        cudyn_library_kernel_count(lib, &n);
        if (n != raw_kernels) ok = false;
        cudyn_library_unload(lib, api);
      }
      if (!ok) {
        ++false_verdicts;
        std::printf("MISMATCH %s (%s): raw CUresult %d (%u kernels), cudyn status %d (%u kernels): %s\n", names[i].c_str(),
                    api == CUDYN_API_DRIVER ? "driver" : "runtime", (int)rr, raw_kernels, (int)s, n,
                    s == CUDYN_SUCCESS ? "" : cudyn_last_error_message());
      }
    }
    if (rr == CUDA_SUCCESS) { ++loaded; timed[i] = true; }
    else if (rr == CUDA_ERROR_NO_BINARY_FOR_GPU) ++no_binary;
    std::printf("%-52s %9zu bytes  raw %s, %u kernels\n", names[i].c_str(), images[i].size(),
                rr == CUDA_SUCCESS ? "loads" : (rr == CUDA_ERROR_NO_BINARY_FOR_GPU ? "NO_BINARY_FOR_GPU" : "fails"), raw_kernels);
  }
  std::printf("verdicts: %zu images, %d load, %d have no code for this GPU, %d mismatches (raw vs cudyn, both APIs)\n",
              images.size(), loaded, no_binary, false_verdicts);

  // First-sight load cost.
  std::vector<std::vector<double>> raw_us(images.size()), cudyn_us(images.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < images.size(); ++i) {
      if (!timed[i]) continue;
      for (int k = 0; k < 2; ++k) {
        bool raw_now = (k == 0) == (r % 2 == 0);
        auto t0 = Clock::now();
        if (raw_now) {
          CUlibrary l;
          CHECK_CU(cuLibraryLoadData_(&l, images[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
          auto t1 = Clock::now();
          raw_us[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          CHECK_CU(cuLibraryUnload_(l));
        } else {
          cudyn_library_t l;
          CHECK_CUDYN(cudyn_library_load_data(images[i].data(), images[i].size(), CUDYN_API_DRIVER, &l));
          auto t1 = Clock::now();
          cudyn_us[i].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_DRIVER));
        }
      }
    }
  }
  double raw_sum = 0, cudyn_sum = 0;
  std::printf("\nfirst-sight load, driver API, median of %d rounds (us)\n%-52s %10s %10s %10s %7s\n", rounds, "image", "bytes",
              "raw", "cudyn", "ratio");
  for (size_t i = 0; i < images.size(); ++i) {
    if (!timed[i]) continue;
    double a = median(raw_us[i]), b = median(cudyn_us[i]);
    raw_sum += a;
    cudyn_sum += b;
    std::printf("%-52s %10zu %10.1f %10.1f %7.3f\n", names[i].c_str(), images[i].size(), a, b, b / a);
  }
  std::printf("%-52s %10s %10.1f %10.1f %7.3f\n", "all images (sum of medians)", "", raw_sum, cudyn_sum, cudyn_sum / raw_sum);
  return false_verdicts ? 1 : 0;
}
