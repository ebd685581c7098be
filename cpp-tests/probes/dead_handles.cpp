// Probe: what the driver does with kernel and library handles after their library is
// unloaded, and how often CUDA hands out a freed address again. Not a test: it prints what
// it measured, and the design of cudyn's handle registry (docs/design-notes.md) rests on it.
// Build: nvcc -o dead_handles dead_handles.cpp -lcuda -lcudart ; run with two cubins:
//   dead_handles two_params.cubin four_params.cubin
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

static std::vector<char> slurp(const char *p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

// Each dead-handle call runs in a fresh process of its own (CUDA does not survive fork), so a
// crash is a result, not the end of the probe: the parent re-runs itself with the call's
// number, and the child does only that call.
static int g_only = -1, g_index = 0;
static const char *g_self, *g_a, *g_b, *g_copies = "0";
template <class F> static void isolated(const char *what, F f) {
  int me = g_index++;
  if (g_only >= 0) {
    if (me == g_only) {
      int rc = f();
      printf("  %-46s -> %d\n", what, rc);
      fflush(stdout);
      _exit(0);
    }
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    std::string n = std::to_string(me);
    execl(g_self, g_self, g_a, g_b, n.c_str(), g_copies, (char *)0);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) printf("  %-46s -> killed by signal %d\n", what, WTERMSIG(st));
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  g_self = argv[0], g_a = argv[1], g_b = argv[2];
  if (argc > 3) g_only = atoi(argv[3]);
  if (argc > 4) g_copies = argv[4];
  auto two = slurp(argv[1]), four = slurp(argv[2]);
  cudaFree(0);  // the runtime's primary context, current on this thread
  CUlibrary lib;
  CUkernel k;
  // Scenario 1 (argv[4] unset or 0): the library alone. Scenario 1: two more copies of the
  // same image stay loaded, as in a test that loads one fatbin from memory and from a file.
  int copies = argc > 4 ? atoi(argv[4]) : 0;
  CUlibrary keep[2];
  for (int i = 0; i < copies && i < 2; ++i) cuLibraryLoadData(&keep[i], four.data(), 0, 0, 0, 0, 0, 0);
  if (g_only < 0) printf("dead handles, driver load, %d other copies of the image loaded, no load since the unload:\n", copies);
  cuLibraryLoadData(&lib, four.data(), 0, 0, 0, 0, 0, 0);
  cuLibraryGetKernel(&k, lib, "k4");
  size_t off, sz;
  if (g_only < 0) printf("  live: cuKernelGetParamInfo(3) -> %d\n", cuKernelGetParamInfo(k, 3, &off, &sz));
  if (g_only < 0) printf("  (each call below in a fresh process that loaded and unloaded the same way)\n");
  cuLibraryUnload(lib);
  isolated("cuKernelGetLibrary then GetParamInfo(dead)", [&] {
    CUlibrary l;
    int r = (int)cuKernelGetLibrary(&l, k);
    if (r) return r;
    return 1000 + (int)cuKernelGetParamInfo(k, 0, &off, &sz);
  });
  isolated("cuKernelGetName(dead)", [&] { const char *n; return (int)cuKernelGetName(&n, k); });
  isolated("cuKernelGetParamInfo(dead, 0)", [&] { return (int)cuKernelGetParamInfo(k, 0, &off, &sz); });
  isolated("cuKernelGetLibrary(dead)", [&] { CUlibrary l; return (int)cuKernelGetLibrary(&l, k); });
  isolated("cuKernelGetAttribute(dead)", [&] {
    int v;
    return (int)cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, 0);
  });
  isolated("cuKernelGetFunction(dead)", [&] { CUfunction f; return (int)cuKernelGetFunction(&f, k); });
  isolated("cuKernelGetLibrary(dead) after churn", [&] {
    std::vector<CUstream> ss(2000);
    for (auto &s : ss) cuStreamCreate(&s, 0);
    std::vector<void *> ps(2000);
    for (auto &p : ps) p = malloc(96);
    CUlibrary l;
    return (int)cuKernelGetLibrary(&l, k);
  });
  isolated("cuLibraryGetKernelCount(dead lib)", [&] { unsigned n; return (int)cuLibraryGetKernelCount(&n, lib); });
  isolated("cuLibraryUnload(dead lib)", [&] { return (int)cuLibraryUnload(lib); });
  isolated("cudaLibraryUnload(dead lib)", [&] { return (int)cudaLibraryUnload((cudaLibrary_t)lib); });
  isolated("cuLaunchKernelEx(dead, 4 args)", [&] {
    int a = 0; float b = 0; double c = 0; void *p = 0;
    void *args[] = {&p, &a, &b, &c};
    CUlaunchConfig cfg = {};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    int r = (int)cuLaunchKernelEx(&cfg, (CUfunction)k, args, 0);
    return r ? r : (int)cuCtxSynchronize();
  });
  isolated("cudaLaunchKernel(dead, 4 args)", [&] {
    int a = 0; float b = 0; double c = 0; void *p = 0;
    void *args[] = {&p, &a, &b, &c};
    int r = (int)cudaLaunchKernel((const void *)k, dim3(1), dim3(1), args, 0, 0);
    return r ? r : (int)cudaDeviceSynchronize();
  });

  if (g_only >= 0 || copies) return 0;
  // Reuse: load/unload in turn, two- and four-parameter libraries, through both APIs.
  for (int mode = 0; mode < 4; ++mode) {
    std::set<void *> kaddr, laddr;
    int kre = 0, lre = 0, cross = 0;
    void *prev_two = 0;
    const int N = 400;
    for (int i = 0; i < N; ++i) {
      bool use_two = i % 2 == 0;
      bool rt = mode == 1 || (mode == 2 && i % 2);
      auto &img = use_two ? two : four;
      CUlibrary l;
      CUkernel kk;
      if (rt) {
        cudaLibraryLoadData((cudaLibrary_t *)&l, img.data(), 0, 0, 0, 0, 0, 0);
        cudaLibraryGetKernel((cudaKernel_t *)&kk, (cudaLibrary_t)l, use_two ? "k2" : "k4");
      } else {
        cuLibraryLoadData(&l, img.data(), 0, 0, 0, 0, 0, 0);
        cuLibraryGetKernel(&kk, l, use_two ? "k2" : "k4");
      }
      if (mode == 3 && i % 3 == 0) cudaMalloc(&prev_two, 1 << (i % 20));  // other driver allocations between
      if (!kaddr.insert(kk).second) ++kre;
      if (!laddr.insert(l).second) ++lre;
      static void *last_k = 0; static bool last_two = false;
      if (last_k == kk && last_two != use_two) ++cross;
      last_k = kk; last_two = use_two;
      if (rt) cudaLibraryUnload((cudaLibrary_t)l); else cuLibraryUnload(l);
    }
    const char *names[] = {"driver", "runtime", "alternating driver/runtime", "driver + cudaMalloc churn"};
    printf("reuse over %d load/unload pairs (%s): kernel address seen before %d times, library %d times, "
           "a 2- and a 4-parameter kernel at one address in a row %d times; distinct kernel addresses %zu\n",
           N, names[mode], kre, lre, cross, kaddr.size());
  }
  // Handles of unloaded libraries that the driver has since reused for a live kernel answer
  // for the live one: the name below is the new kernel's.
  cuLibraryLoadData(&lib, two.data(), 0, 0, 0, 0, 0, 0);
  CUkernel dead;
  cuLibraryGetKernel(&dead, lib, "k2");
  cuLibraryUnload(lib);
  CUlibrary lib4;
  cuLibraryLoadData(&lib4, four.data(), 0, 0, 0, 0, 0, 0);
  CUkernel live;
  cuLibraryGetKernel(&live, lib4, "k4");
  const char *nm = "?";
  cuKernelGetName(&nm, dead);
  printf("after reload: old handle %p, new %p, old handle's name now '%s'\n", (void *)dead, (void *)live, nm);
  return 0;
}
