// Real-world images on the GPU: every fatbin or cubin in a folder (scripts/real_world_fatbins.py
// fills one from NVIDIA's own libraries; examples/prepare_images.rs adds, per image, the
// variables its cubins define, `<name>.globals`, and the image cudyn builds for this GPU,
// `<name>.handed`) must load through cudyn, through both APIs, exactly when the raw driver loads
// it (or fail with NO_BINARY_FOR_DEVICE where the driver finds no code for the GPU), and give the
// same things: the same kernel names, each kernel's parameter layout (cudyn_kernel_param_info
// against cuKernelGetParamInfo: cudyn reads it from the image it built), the same outcome when
// the code is loaded into the context (cuLibraryGetModule), the same globals and managed
// variables (status and size). The image
// cudyn builds is also loaded raw and must give the same again.
//
// Then the cost, driver API: first sight (the images loaded in turn: with more than 32 of them,
// more than cudyn's memo recognises, every load plans, decompresses and checks) and a repeated load
// (the same image again and again: the memo's path) against raw cuLibraryLoadData of the same
// bytes, and raw CUDA on the image cudyn built. Raw and cudyn alternate, the order flipping every
// round; each figure is the median over rounds of the load call alone (unload untimed).
//   usage: corpus_load <folder> [rounds=9]
// Exit status: 1 if any image gives something other than the raw driver does.
//
// Some images crash CUDA itself (relocatable code with symbols it does not define: the driver
// dies in cuLibraryGetModule). For the run to go on past one, CORPUS_PROGRESS names a file that
// holds the name of the image being examined (written before each), and CORPUS_SKIP a file of
// names to leave out (one a line); scripts/gpu-report.sh reruns with the crashed image skipped.
// CORPUS_ONLY=raw or =cudyn examines each image through that side alone (no costs): what a
// skipped image does to raw CUDA and to cudyn, each in a process of its own.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>
#include "../test_util.hpp"
#include "cudyn.h"

using Clock = std::chrono::steady_clock;

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static bool ends_with(const std::string &s, const char *tail) {
  size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// What one loaded library shows.
struct Seen {
  int status = 0;  // CUresult of the load, or cudyn_status
  std::vector<std::string> kernels;
  int module = -1;  // cuLibraryGetModule's CUresult
  std::vector<std::string> vars;  // "name global=<rc>:<size> managed=<rc>:<size>"
  std::vector<std::string> params;  // "name: offset+size ..." per kernel, in name order
  // Everything but the layouts (param_difference compares those).
  bool operator==(const Seen &o) const { return kernels == o.kernels && module == o.module && vars == o.vars; }
};

static decltype(&cuLibraryGetKernelCount) count_;
static decltype(&cuLibraryEnumerateKernels) enumerate_;
static decltype(&cuKernelGetName) name_;
static decltype(&cuLibraryGetModule) module_;
static decltype(&cuLibraryGetGlobal) global_;
static decltype(&cuLibraryGetManaged) managed_;

static decltype(&cuKernelGetParamInfo) param_;

static decltype(&cuKernelGetFunction) function_;

// Each kernel's parameter layout, as CUDA gives it (`via_cudyn` false) or as cudyn does:
// " offset+size" per parameter; where the query fails other than past the last parameter,
// " !<CUresult> function <cuKernelGetFunction's CUresult>" (raw) or " !cudyn <status>".
static std::string layout(CUkernel k, bool via_cudyn) {
  std::string out;
  for (size_t i = 0; i < 4096; ++i) {
    size_t off = 0, size = 0;
    if (via_cudyn) {
      cudyn_status st = cudyn_kernel_param_info((cudyn_kernel_t)k, i, &off, &size);
      if (st == CUDYN_ERROR_INVALID_ARGUMENT) break;
      if (st != CUDYN_SUCCESS) return out + " !cudyn " + std::to_string((int)st);
    } else {
      CUresult r = param_(k, i, &off, &size);
      if (r == CUDA_ERROR_INVALID_VALUE) break;
      if (r != CUDA_SUCCESS) {
        CUfunction f = nullptr;
        return out + " !" + std::to_string((int)r) + " function " + std::to_string((int)function_(&f, k));
      }
    }
    out += " " + std::to_string(off) + "+" + std::to_string(size);
  }
  return out;
}

// The first kernel whose layout differs ("" if none). A kernel CUDA gives no layout for (its
// code cannot be loaded into the context: relocatable code whose symbols no image defines)
// is not compared: cudyn reads its layout from the image's tables; such kernels are counted in
// `cuda_failed` and the first is kept in `example`.
static std::string param_difference(const Seen &raw, const Seen &ours, int &cuda_failed, std::string &example) {
  for (size_t i = 0; i < raw.params.size() && i < ours.params.size(); ++i) {
    const std::string &a = raw.params[i], &b = ours.params[i];
    if (a.find(" !") != std::string::npos && a.substr(0, a.find(':')) == b.substr(0, b.find(':'))) {
      ++cuda_failed;
      if (example.empty()) example = a + " | cudyn:" + b.substr(b.find(':') + 1);
      continue;
    }
    if (a != b) return "parameters: " + a + " vs " + b;
  }
  return raw.params.size() == ours.params.size() ? "" : "parameters: kernel counts differ";
}

static void look(CUlibrary lib, const std::vector<std::string> &vars, Seen &s, bool via_cudyn = false) {
  unsigned n = 0;
  count_(&n, lib);
  std::vector<CUkernel> ks(n);
  if (n) enumerate_(ks.data(), n, lib);
  for (CUkernel k : ks) {
    const char *name = nullptr;
    std::string nm = name_(&name, k) == CUDA_SUCCESS && name ? name : "?";
    s.kernels.push_back(nm);
    s.params.push_back(nm + ":" + layout(k, via_cudyn));
  }
  std::sort(s.kernels.begin(), s.kernels.end());
  std::sort(s.params.begin(), s.params.end());
  CUmodule m = nullptr;
  s.module = (int)module_(&m, lib);
  for (auto &v : vars) {
    CUdeviceptr p = 0;
    size_t bytes = 0;
    int g = (int)global_(&p, &bytes, lib, v.c_str());
    size_t gb = bytes;
    bytes = 0;
    int mg = (int)managed_(&p, &bytes, lib, v.c_str());
    s.vars.push_back(v + " global=" + std::to_string(g) + ":" + std::to_string(gb) + " managed=" + std::to_string(mg) +
                     ":" + std::to_string(bytes));
  }
}

static std::string first_difference(const Seen &a, const Seen &b) {
  if (a.kernels != b.kernels)
    return "kernels: " + std::to_string(a.kernels.size()) + " vs " + std::to_string(b.kernels.size());
  if (a.module != b.module) return "module load: " + std::to_string(a.module) + " vs " + std::to_string(b.module);
  for (size_t i = 0; i < a.vars.size() && i < b.vars.size(); ++i)
    if (a.vars[i] != b.vars[i]) return a.vars[i] + " vs " + b.vars[i];
  return "?";
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: %s <folder> [rounds]", argv[0]);
  require_gpu();
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 9;
  auto load_ = DRIVER(cuLibraryLoadData);
  auto unload_ = DRIVER(cuLibraryUnload);
  count_ = DRIVER(cuLibraryGetKernelCount, 12040);
  enumerate_ = DRIVER(cuLibraryEnumerateKernels, 12040);
  name_ = DRIVER(cuKernelGetName, 12030);
  param_ = DRIVER(cuKernelGetParamInfo, 12040);
  function_ = DRIVER(cuKernelGetFunction);
  module_ = DRIVER(cuLibraryGetModule);
  global_ = DRIVER(cuLibraryGetGlobal);
  managed_ = DRIVER(cuLibraryGetManaged);
  CHECK_RT(cudaFree(nullptr));

  std::string dir = argv[1];
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.' && !ends_with(e->d_name, ".globals") && !ends_with(e->d_name, ".handed"))
        names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  if (const char *skip = std::getenv("CORPUS_SKIP")) {
    std::ifstream in(skip);
    for (std::string line; std::getline(in, line);)
      names.erase(std::remove(names.begin(), names.end(), line), names.end());
  }
  if (names.empty()) FAIL("no images in %s", argv[1]);
  const char *progress = std::getenv("CORPUS_PROGRESS");
  auto note = [&](const std::string &name) {
    if (!progress) return;
    if (FILE *f = std::fopen(progress, "w")) {
      std::fputs(name.c_str(), f);
      std::fclose(f);
    }
  };
  std::vector<std::vector<char>> images, handed(names.size());
  std::vector<std::vector<std::string>> vars(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string p = dir + "/" + names[i];
    images.push_back(read_file(p.c_str()));
    if (FILE *f = std::fopen((p + ".handed").c_str(), "rb")) {
      std::fclose(f);
      handed[i] = read_file((p + ".handed").c_str());
    }
    std::ifstream g(p + ".globals");
    for (std::string line; std::getline(g, line);)
      if (!line.empty()) vars[i].push_back(line);
  }

  if (const char *only = std::getenv("CORPUS_ONLY")) {
    bool raw = std::strcmp(only, "raw") == 0;
    for (size_t i = 0; i < images.size(); ++i) {
      note(names[i]);
      Seen seen;
      if (raw) {
        CUlibrary rl = nullptr;
        CUresult rr = load_(&rl, images[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
        if (rr == CUDA_SUCCESS) {
          look(rl, vars[i], seen);
          unload_(rl);
        }
        std::printf("%s: raw load %d, %zu kernels, module %d\n", names[i].c_str(), (int)rr, seen.kernels.size(),
                    seen.module);
        continue;
      }
      for (cudyn_api api : {CUDYN_API_DRIVER, CUDYN_API_RUNTIME}) {
        cudyn_library_t lib = nullptr;
        cudyn_status st = cudyn_library_load_data(images[i].data(), images[i].size(), api, &lib);
        if (st != CUDYN_SUCCESS) {
          std::printf("%s (%s): cudyn refuses (%s): %s\n", names[i].c_str(), api_name(api), cudyn_status_string(st),
                      cudyn_last_error_message());
          continue;
        }
        Seen ours;
        look(lib, vars[i], ours);
        std::printf("%s (%s): cudyn loads, %zu kernels, module %d\n", names[i].c_str(), api_name(api),
                    ours.kernels.size(), ours.module);
        cudyn_library_unload(lib, api);
      }
    }
    return 0;
  }

  int mismatches = 0, loaded = 0, no_binary = 0, with_vars = 0, refused_unrunnable = 0, cuda_failed = 0;
  std::string failed_example;
  size_t kernels_total = 0, vars_total = 0;
  std::vector<bool> timed(images.size(), false);
  for (size_t i = 0; i < images.size(); ++i) {
    note(names[i]);
    Seen raw;
    CUlibrary rl = nullptr;
    CUresult rr = load_(&rl, images[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    raw.status = rr;
    if (rr == CUDA_SUCCESS) {
      look(rl, vars[i], raw);
      unload_(rl);
    }
    auto report = [&](const char *who, const char *what) {
      ++mismatches;
      std::printf("MISMATCH %s (%s): %s\n", names[i].c_str(), who, what);
    };
    // CUDA loads lazily: an image whose code it cannot load into a context (PTX too new for
    // this driver, say) still "loads", and fails at first use. cudyn compiles PTX at load, so
    // it may say so at once; it must never refuse what CUDA can load into a context.
    bool runnable = rr == CUDA_SUCCESS && raw.module == CUDA_SUCCESS;
    bool all_ok = rr == CUDA_SUCCESS;
    for (cudyn_api api : {CUDYN_API_DRIVER, CUDYN_API_RUNTIME}) {
      cudyn_library_t lib = nullptr;
      cudyn_status s = cudyn_library_load_data(images[i].data(), images[i].size(), api, &lib);
      bool verdict = rr == CUDA_SUCCESS ? (s == CUDYN_SUCCESS || !runnable)
                                        : (rr == CUDA_ERROR_NO_BINARY_FOR_GPU ? s == CUDYN_ERROR_NO_BINARY_FOR_DEVICE
                                                                              : s != CUDYN_SUCCESS);
      if (rr == CUDA_SUCCESS && !runnable && s != CUDYN_SUCCESS) {
        ++refused_unrunnable;
        std::printf("refused, as CUDA would at first use (module %d): %s (%s): %s\n", raw.module, names[i].c_str(),
                    api_name(api), cudyn_last_error_message());
      }
      all_ok = all_ok && s == CUDYN_SUCCESS;
      if (!verdict) {
        char what[600];
        std::snprintf(what, sizeof what, "raw CUresult %d, cudyn status %d: %s", (int)rr, (int)s,
                      s == CUDYN_SUCCESS ? "" : cudyn_last_error_message());
        report(api_name(api), what);
      }
      if (s == CUDYN_SUCCESS) {
        Seen ours;
        look(lib, vars[i], ours, true);
        if (rr == CUDA_SUCCESS && !(ours == raw)) report(api_name(api), first_difference(raw, ours).c_str());
        else if (rr == CUDA_SUCCESS) {
          std::string d = param_difference(raw, ours, cuda_failed, failed_example);
          if (!d.empty()) report(api_name(api), d.c_str());
        }
        cudyn_library_unload(lib, api);
      }
    }
    if (rr == CUDA_SUCCESS && !handed[i].empty()) {
      Seen built;
      CUlibrary hl = nullptr;
      CUresult hr = load_(&hl, handed[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
      if (hr != CUDA_SUCCESS) {
        report("built image, raw", ("load failed: " + std::to_string(hr)).c_str());
      } else {
        look(hl, vars[i], built);
        unload_(hl);
        if (!(built == raw) || built.params != raw.params)
          report("built image, raw", built == raw ? "parameters" : first_difference(raw, built).c_str());
      }
    }
    if (rr == CUDA_SUCCESS) {
      ++loaded;
      timed[i] = all_ok;
      kernels_total += raw.kernels.size();
      vars_total += vars[i].size();
      with_vars += !vars[i].empty();
    } else if (rr == CUDA_ERROR_NO_BINARY_FOR_GPU) {
      ++no_binary;
    }
    std::printf("%-64s %9zu bytes  raw %s, %zu kernels, module %d, %zu variables\n", names[i].c_str(), images[i].size(),
                rr == CUDA_SUCCESS ? "loads" : (rr == CUDA_ERROR_NO_BINARY_FOR_GPU ? "NO_BINARY_FOR_GPU" : "fails"),
                raw.kernels.size(), raw.module, vars[i].size());
  }
  std::printf("verdicts: %zu images, %d load (%zu kernels, %zu variables in %d images), %d have no code for this GPU, "
              "%d refused at load that CUDA fails at first use, %d mismatches (raw vs cudyn, both APIs, and raw on the "
              "image cudyn builds)\n",
              images.size(), loaded, kernels_total, vars_total, with_vars, no_binary, refused_unrunnable, mismatches);
  std::printf("layouts: %d kernel loads where CUDA gives no layout and cudyn reads the image's (both APIs)%s%s\n",
              cuda_failed, failed_example.empty() ? "" : "; e.g. ", failed_example.c_str());

  // Cost. One timed load: `f` returns the microseconds of the load call (unload untimed).
  auto time_raw = [&](const std::vector<char> &img) {
    CUlibrary l;
    auto t0 = Clock::now();
    CHECK_CU(load_(&l, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    CHECK_CU(unload_(l));
    return us;
  };
  auto time_raw_rt = [&](const std::vector<char> &img) {
    cudaLibrary_t l;
    auto t0 = Clock::now();
    CHECK_RT(cudaLibraryLoadData(&l, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    CHECK_RT(cudaLibraryUnload(l));
    return us;
  };
  auto time_cudyn = [&](const std::vector<char> &img, cudyn_api api) {
    cudyn_library_t l;
    auto t0 = Clock::now();
    CHECK_CUDYN(cudyn_library_load_data(img.data(), img.size(), api, &l));
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    CHECK_CUDYN(cudyn_library_unload(l, api));
    return us;
  };
  size_t n = images.size();
  if (std::count(timed.begin(), timed.end(), true) <= 32)
    std::printf("note: 32 images or fewer: cudyn's memo recognises them from the second round, so \"first sight\" "
                "below is partly repeated loads\n");
  std::vector<std::vector<double>> raw_us(n), cudyn_us(n), built_us(n);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) {
      if (!timed[i]) continue;
      for (int k = 0; k < 2; ++k) {
        if ((k == 0) == (r % 2 == 0)) raw_us[i].push_back(time_raw(images[i]));
        else cudyn_us[i].push_back(time_cudyn(images[i], CUDYN_API_DRIVER));
      }
      if (!handed[i].empty()) built_us[i].push_back(time_raw(handed[i]));
    }
  }
  double raw_sum = 0, cudyn_sum = 0, built_sum = 0, worst = 0;
  size_t worst_i = 0;
  std::printf("\nfirst-sight load, driver API, median of %d rounds (us)\n%-64s %10s %10s %10s %10s %7s\n", rounds, "image",
              "bytes", "raw", "cudyn", "raw-built", "ratio");
  for (size_t i = 0; i < n; ++i) {
    if (!timed[i]) continue;
    double a = median(raw_us[i]), b = median(cudyn_us[i]), c = median(built_us[i]);
    raw_sum += a;
    cudyn_sum += b;
    built_sum += c;
    if (b / a > worst) worst = b / a, worst_i = i;
    std::printf("%-64s %10zu %10.1f %10.1f %10.1f %7.3f\n", names[i].c_str(), images[i].size(), a, b, c, b / a);
  }
  std::printf("%-64s %10s %10.1f %10.1f %10.1f %7.3f\n", "first sight, all images (sum of medians)", "", raw_sum, cudyn_sum,
              built_sum, cudyn_sum / raw_sum);
  if (loaded) std::printf("worst first-sight ratio: %.3f (%s)\n", worst, names[worst_i].c_str());

  // Repeated: the same bytes again and again (the memo's path), both APIs against their raw call.
  double rep[2][2] = {{0, 0}, {0, 0}};  // [api][raw, cudyn]
  double rep_worst[2] = {0, 0};
  for (size_t i = 0; i < n; ++i) {
    if (!timed[i]) continue;
    for (int a = 0; a < 2; ++a) {
      cudyn_api api = a == 0 ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
      for (int w = 0; w < 3; ++w) time_cudyn(images[i], api);  // built twice: remembered
      std::vector<double> rv, cv;
      for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < 2; ++k) {
          if ((k == 0) == (r % 2 == 0)) rv.push_back(a == 0 ? time_raw(images[i]) : time_raw_rt(images[i]));
          else cv.push_back(time_cudyn(images[i], api));
        }
      }
      double x = median(rv), y = median(cv);
      rep[a][0] += x;
      rep[a][1] += y;
      if (y / x > 1.3) std::printf("repeated load over 1.3x (%s): %s %zu bytes, raw %.1f us, cudyn %.1f us\n", api_name(api),
                                   names[i].c_str(), images[i].size(), x, y);
      rep_worst[a] = std::max(rep_worst[a], y / x);
    }
  }
  std::printf("repeated load, sum of medians: driver raw %.1f us, cudyn %.1f us, ratio %.3f (worst image %.3f); "
              "runtime raw %.1f us, cudyn %.1f us, ratio %.3f (worst image %.3f)\n",
              rep[0][0], rep[0][1], rep[0][1] / rep[0][0], rep_worst[0], rep[1][0], rep[1][1], rep[1][1] / rep[1][0],
              rep_worst[1]);
  return mismatches ? 1 : 0;
}
