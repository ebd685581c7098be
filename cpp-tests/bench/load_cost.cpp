// What a first-sight load through cudyn costs, taken apart: for each image in a folder made by
// examples/prepare_images.rs (the image and `<name>.handed`, the image cudyn builds for this
// GPU), raw cuLibraryLoadData of the original; of the built image in a fresh buffer (as cudyn
// hands a newly built one over), copied by CUDA; the same with CU_LIBRARY_BINARY_IS_PRESERVED
// (read in place); that with the two JIT log buffers cudyn passes; that plus listing the
// library's kernels; and cudyn's own load. Images are taken in turn (so cudyn's memo never
// holds the one loaded); each figure is the sum over images of the median over rounds.
//   usage: load_cost <folder> [rounds=7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>
#include <vector>
#include "../test_util.hpp"
#include "cudyn.h"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s <folder> [rounds]", argv[0]);
  require_gpu();
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  auto load_ = DRIVER(cuLibraryLoadData);
  auto unload_ = DRIVER(cuLibraryUnload);
  auto count_ = DRIVER(cuLibraryGetKernelCount, 12040);
  auto enumerate_ = DRIVER(cuLibraryEnumerateKernels, 12040);
  CHECK_RT(cudaFree(nullptr));
  std::string dir = argv[1];
  std::vector<std::vector<char>> orig, built;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 7 && n.compare(n.size() - 7, 7, ".handed") == 0) {
        auto o = read_file((dir + "/" + n.substr(0, n.size() - 7)).c_str());
        cudyn_library_t c;  // only images cudyn loads (PTX too new for the driver fails)
        if (cudyn_library_load_data(o.data(), o.size(), CUDYN_API_DRIVER, &c) != CUDYN_SUCCESS) continue;
        cudyn_library_unload(c, CUDYN_API_DRIVER);
        built.push_back(read_file((dir + "/" + n).c_str()));
        orig.push_back(o);
      }
    }
    closedir(d);
  }
  if (orig.empty()) FAIL("no <name>.handed images in %s", argv[1]);
  const char *names[] = {"raw, original image", "raw, built image, fresh buffer, copied", "  + BINARY_IS_PRESERVED",
                         "  + two 16 KiB JIT log buffers", "  + count and list the kernels", "cudyn"};
  const int V = 6;
  std::vector<std::vector<std::vector<double>>> us(V, std::vector<std::vector<double>>(orig.size()));
  std::vector<char> info(16384), error(16384);
  for (int r = 0; r < rounds; ++r) {
    for (int v = 0; v < V; ++v) {
      for (size_t i = 0; i < orig.size(); ++i) {
        // A fresh buffer for the built image, copied untimed, as cudyn's newly built one is.
        std::vector<char> fresh(built[i]);
        CUlibrary l = nullptr;
        unsigned lib_opt[] = {CU_LIBRARY_BINARY_IS_PRESERVED};
        void *lib_val[] = {(void *)1};
        CUjit_option jit_opt[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                                  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *jit_val[] = {info.data(), (void *)(size_t)16384, error.data(), (void *)(size_t)16384};
        auto t0 = Clock::now();
        if (v == 0) {
          CHECK_CU(load_(&l, orig[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
        } else if (v == 1) {
          CHECK_CU(load_(&l, fresh.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
        } else if (v == 2) {
          CHECK_CU(load_(&l, fresh.data(), nullptr, nullptr, 0, (CUlibraryOption *)lib_opt, lib_val, 1));
        } else if (v <= 4) {
          CHECK_CU(load_(&l, fresh.data(), jit_opt, jit_val, 4, (CUlibraryOption *)lib_opt, lib_val, 1));
          if (v == 4) {
            unsigned n = 0;
            count_(&n, l);
            std::vector<CUkernel> ks(n);
            if (n) enumerate_(ks.data(), n, l);
          }
        } else {
          cudyn_library_t c;
          CHECK_CUDYN(cudyn_library_load_data(orig[i].data(), orig[i].size(), CUDYN_API_DRIVER, &c));
          l = c;
        }
        us[v][i].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        if (v == 5) CHECK_CUDYN(cudyn_library_unload(l, CUDYN_API_DRIVER));
        else CHECK_CU(unload_(l));
      }
    }
  }
  std::printf("%zu images, median of %d rounds, summed (us)\n", orig.size(), rounds);
  double base = 0;
  for (int v = 0; v < V; ++v) {
    double s = 0;
    for (auto &x : us[v]) s += median(x);
    if (v == 0) base = s;
    std::printf("%-44s %10.1f  %6.3f\n", names[v], s, s / base);
  }
  // The images where cudyn costs most against raw, every variant beside it.
  std::vector<size_t> order(orig.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto ratio = [&](size_t i) { return median(us[5][i]) / median(us[0][i]); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratio(a) > ratio(b); });
  std::printf("\nworst images (us): bytes, built bytes, then each variant above in turn, and cudyn/raw\n");
  for (size_t k = 0; k < order.size() && k < 12; ++k) {
    size_t i = order[k];
    std::printf("%9zu %9zu", orig[i].size(), built[i].size());
    for (int v = 0; v < V; ++v) std::printf(" %9.1f", median(us[v][i]));
    std::printf("  %6.3f\n", ratio(i));
  }
  return 0;
}
