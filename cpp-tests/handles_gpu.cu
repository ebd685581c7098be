// Kernel and library handles on a real GPU: CUDA reuses the addresses of unloaded libraries'
// kernels at once, so one address names kernels of different layouts over time. A launch
// through cudyn must be checked against the kernel it launches (never a layout remembered for
// an earlier one), a valid handle wherever it came from must launch, and a handle cudyn knows
// is dead must be refused without a crash. One case per ctest test (argv[1]).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include "test_util.hpp"

static const int N = 4096;

enum class Loader { cudyn_runtime, cudyn_driver, raw_runtime, raw_driver };
static const char *loader_name(Loader l) {
  switch (l) {
    case Loader::cudyn_runtime: return "cudyn (runtime)";
    case Loader::cudyn_driver: return "cudyn (driver)";
    case Loader::raw_runtime: return "cudaLibraryLoadData";
    default: return "cuLibraryLoadData";
  }
}

// A library of one kernel "k", loaded by one of four loaders, unloaded by the same.
struct Lib {
  Loader how;
  cudyn_library_t lib = nullptr;
  cudyn_kernel_t k = nullptr;
  Lib(Loader h, const std::vector<char> &img) : how(h) {
    switch (how) {
      case Loader::cudyn_runtime:
      case Loader::cudyn_driver: {
        cudyn_api api = how == Loader::cudyn_runtime ? CUDYN_API_RUNTIME : CUDYN_API_DRIVER;
        CHECK_CUDYN(cudyn_library_load_data(img.data(), img.size(), api, &lib));
        CHECK_CUDYN(cudyn_library_get_kernel(lib, "k", api, &k));
        break;
      }
      case Loader::raw_runtime:
        CHECK_RT(cudaLibraryLoadData(&lib, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
        CHECK_RT(cudaLibraryGetKernel(&k, lib, "k"));
        break;
      case Loader::raw_driver: {
        static auto load = driver_fn<decltype(&cuLibraryLoadData)>("cuLibraryLoadData");
        static auto get = driver_fn<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
        CHECK_CU(load(&lib, img.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
        CHECK_CU(get(&k, lib, "k"));
        break;
      }
    }
  }
  bool raw() const { return how == Loader::raw_runtime || how == Loader::raw_driver; }
  // The program's own library: its kernel is foreign to cudyn. Adopting it (the program
  // vouches it stays live until released) makes cudyn accept it even at an address a kernel
  // cudyn unloaded once had, and remember its layout.
  void adopt() { CHECK_CUDYN(cudyn_kernel_adopt(k)); adopted = true; }
  bool adopted = false;
  void unload() {
    if (adopted) CHECK_CUDYN(cudyn_kernel_release(k));
    switch (how) {
      case Loader::cudyn_runtime: CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME)); break;
      case Loader::cudyn_driver: CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER)); break;
      case Loader::raw_runtime: CHECK_RT(cudaLibraryUnload(lib)); break;
      case Loader::raw_driver: {
        static auto unl = driver_fn<decltype(&cuLibraryUnload)>("cuLibraryUnload");
        CHECK_CU(unl(lib));
        break;
      }
    }
  }
};

static const std::vector<char> &two() { static auto v = read_file(TWO_PATH); return v; }
static const std::vector<char> &four() { static auto v = read_file(FOUR_PATH); return v; }

// Launch the two-parameter k (x += 1) through `api` and check every element; then check that a
// launch with four arguments is refused.
static void run_two(cudyn_kernel_t k, cudyn_api api, cudyn_stream_t s = nullptr) {
  auto x = random_floats(N, 7);
  DevBuf dx(x);
  int n = N;
  void *args[] = {&dx.p, &n};
  cudyn_launch_config cfg = config_1d(N, 256, api, s);
  CHECK_CUDYN(cudyn_launch(k, &cfg, args, 2));
  size_t sizes[] = {sizeof(float *), sizeof(int)};
  CHECK_CUDYN(cudyn_launch_checked(k, &cfg, args, sizes, 2));
  CHECK_RT(cudaStreamSynchronize(s));
  auto y = dx.get();
  for (int i = 0; i < N; ++i)
    if (y[i] != x[i] + 2.0f) FAIL("x[%d] = %g, want %g (%s)", i, y[i], x[i] + 2.0f, api_name(api));
  void *four_args[] = {&dx.p, &dx.p, &dx.p, &n};
  EXPECT_STATUS(cudyn_launch(k, &cfg, four_args, 4), CUDYN_ERROR_ARGUMENT_MISMATCH);
  EXPECT(std::strstr(cudyn_last_error_message(), "takes 2") != nullptr, "%s", cudyn_last_error_message());
}

// Launch the four-parameter k (c = a + b) through `api` and check every element; a launch
// with two arguments is refused (and CUDA never reads past them).
static void run_four(cudyn_kernel_t k, cudyn_api api, cudyn_stream_t s = nullptr) {
  auto a = random_floats(N, 11), b = random_floats(N, 12);
  DevBuf da(a), db(b), dc(N);
  int n = N;
  void *args[] = {&da.p, &db.p, &dc.p, &n};
  cudyn_launch_config cfg = config_1d(N, 256, api, s);
  CHECK_CUDYN(cudyn_launch(k, &cfg, args, 4));
  CHECK_RT(cudaStreamSynchronize(s));
  auto c = dc.get();
  for (int i = 0; i < N; ++i)
    if (c[i] != a[i] + b[i]) FAIL("c[%d] = %g, want %g (%s)", i, c[i], a[i] + b[i], api_name(api));
  void *two_args[] = {&dc.p, &n};
  EXPECT_STATUS(cudyn_launch(k, &cfg, two_args, 2), CUDYN_ERROR_ARGUMENT_MISMATCH);
  EXPECT(std::strstr(cudyn_last_error_message(), "takes 4") != nullptr, "%s", cudyn_last_error_message());
  size_t wrong[] = {8, 8, 8, 8};
  EXPECT_STATUS(cudyn_launch_checked(k, &cfg, args, wrong, 4), CUDYN_ERROR_ARGUMENT_MISMATCH);
}

// A two-parameter kernel loaded by `first`, launched through cudyn (both APIs), unloaded; then
// a four-parameter kernel loaded by `second`, usually at the same address: it launches through
// cudyn, checked against its own four parameters, through both APIs.

// Kernels cudyn unloaded whose address cudyn has not seen live since (it refuses them).
static std::set<cudyn_kernel_t> g_dead;

// A library of the program's own: at an address a kernel cudyn unloaded had, cudyn refuses the
// handle (it will not hand a possibly dead handle to CUDA, which can crash on one) until the
// program vouches for it; elsewhere it is launched as a plain foreign kernel, or adopted.
static void take(Lib &l, bool adopt_anyway) {
  if (!l.raw()) {
    g_dead.erase(l.k);
    return;
  }
  if (g_dead.count(l.k)) {
    int n = N;
    void *args[] = {&n, &n, &n, &n};
    cudyn_launch_config cfg = config_1d(N, 256, CUDYN_API_DRIVER);
    EXPECT_STATUS(cudyn_launch(l.k, &cfg, args, 4), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT(std::strstr(cudyn_last_error_message(), "cudyn_kernel_adopt") != nullptr, "%s", cudyn_last_error_message());
    g_dead.erase(l.k);
    l.adopt();
  } else if (adopt_anyway) {
    l.adopt();
  }
}
static void drop(Lib &l) {
  l.unload();
  if (!l.raw()) g_dead.insert(l.k);
}

static int reuse(Loader first, Loader second) {
  int reused = 0, rounds = 0;
  // Until the driver has reused the address three times (it nearly always does at once).
  for (; rounds < 32 && reused < 3; ++rounds) {
    Lib a(first, two());
    take(a, rounds % 2);
    run_two(a.k, CUDYN_API_DRIVER);
    run_two(a.k, CUDYN_API_RUNTIME);
    cudyn_kernel_t old = a.k;
    drop(a);
    Lib b(second, four());
    reused += b.k == old;
    take(b, rounds % 2);
    run_four(b.k, CUDYN_API_DRIVER);
    run_four(b.k, CUDYN_API_RUNTIME);
    drop(b);
  }
  std::printf("%s then %s: the 4-parameter kernel took the 2-parameter kernel's address in %d of %d rounds; "
              "every launch checked against its own layout\n",
              loader_name(first), loader_name(second), reused, rounds);
  return reused;
}

// How often the driver reused an address is its choice: on the H200 it varies from run to run
// for the same pair of loaders (0 of 32 rounds once, 3 of 4 the next). So a case says how many
// of its launches met a reused address, and fails only on a wrong result or a wrong verdict;
// tests/handles.rs, against a stand-in driver that always reuses, is the deterministic proof.
static void require_reuse(int reused) {
  std::printf("launches at a reused address in this case: %d rounds\n", reused);
}

static int reuse_by_cudyn_load() {
  require_reuse(reuse(Loader::cudyn_driver, Loader::cudyn_runtime) + reuse(Loader::cudyn_runtime, Loader::cudyn_driver) +
                reuse(Loader::cudyn_driver, Loader::cudyn_driver));
  return 0;
}
static int reuse_by_runtime_load() {
  require_reuse(reuse(Loader::cudyn_driver, Loader::raw_runtime) + reuse(Loader::raw_runtime, Loader::raw_runtime));
  return 0;
}
static int reuse_by_driver_load() {
  require_reuse(reuse(Loader::cudyn_runtime, Loader::raw_driver) + reuse(Loader::raw_driver, Loader::raw_driver));
  return 0;
}
// A foreign kernel launched through cudyn and unloaded outside it; then cudyn loads.
static int cudyn_load_after_foreign() {
  require_reuse(reuse(Loader::raw_runtime, Loader::cudyn_driver) + reuse(Loader::raw_driver, Loader::cudyn_runtime));
  return 0;
}

// Use after unload and double unload: refused with a status, nothing reaches CUDA (the
// driver crashes on a dead library handle: cuLibraryUnload, cuLibraryGetKernelCount).
static int dead_handles() {
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    Lib a(api == CUDYN_API_RUNTIME ? Loader::cudyn_runtime : Loader::cudyn_driver, two());
    run_two(a.k, api);
    a.unload();
    DevBuf dx(16);
    int n = 16;
    void *args[] = {&dx.p, &n};
    cudyn_launch_config cfg = config_1d(16, 16, api);
    EXPECT_STATUS(cudyn_launch(a.k, &cfg, args, 2), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT(std::strstr(cudyn_last_error_message(), "unloaded") != nullptr, "%s", cudyn_last_error_message());
    const char *name = nullptr;
    EXPECT_STATUS(cudyn_kernel_name(a.k, &name), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT_STATUS(cudyn_library_unload(a.lib, api), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT(std::strstr(cudyn_last_error_message(), "unloaded through cudyn") != nullptr, "%s",
           cudyn_last_error_message());
    cudyn_kernel_t k = nullptr;
    EXPECT_STATUS(cudyn_library_get_kernel(a.lib, "k", api, &k), CUDYN_ERROR_INVALID_ARGUMENT);
    EXPECT(k == nullptr, "output left unchanged on failure");
    unsigned count = 0;
    EXPECT_STATUS(cudyn_library_kernel_count(a.lib, &count), CUDYN_ERROR_INVALID_ARGUMENT);
    // Loaded again by cudyn (same address, most likely): live again, unload works once.
    Lib b(api == CUDYN_API_RUNTIME ? Loader::cudyn_runtime : Loader::cudyn_driver, two());
    run_two(b.k, api);
    b.unload();
    EXPECT_STATUS(cudyn_library_unload(b.lib, api), CUDYN_ERROR_INVALID_ARGUMENT);
  }
  std::printf("launch, name, lookup, count and a second unload after unload: refused, no crash\n");
  return 0;
}

// A kernel of a library cudyn loaded, found with a raw cuLibraryGetKernel and never shown to
// cudyn, and one adopted the same way: after cudyn unloads the library both are refused, not
// handed to the driver (the unload lists the library's kernels when cudyn has not seen them
// all; an adopted kernel of a library cudyn loaded is that library's).
static int raw_lookups_die_with_the_unload() {
  static auto get = driver_fn<decltype(&cuLibraryGetKernel)>("cuLibraryGetKernel");
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_library_t lib = nullptr;
    CHECK_CUDYN(cudyn_library_load_data(two().data(), two().size(), api, &lib));
    CUkernel unseen = nullptr, adopted = nullptr;
    CHECK_CU(get(&unseen, static_cast<CUlibrary>(lib), "k"));
    adopted = unseen;
    CHECK_CUDYN(cudyn_kernel_adopt(adopted));
    run_two(adopted, api);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    DevBuf dx(16);
    int n = 16;
    void *args[] = {&dx.p, &n};
    cudyn_launch_config cfg = config_1d(16, 16, api);
    EXPECT_STATUS(cudyn_launch(adopted, &cfg, args, 2), CUDYN_ERROR_INVALID_ARGUMENT);
    const char *name = nullptr;
    EXPECT_STATUS(cudyn_kernel_name(unseen, &name), CUDYN_ERROR_INVALID_ARGUMENT);
    size_t count = 0;
    EXPECT_STATUS(cudyn_kernel_param_count(unseen, &count), CUDYN_ERROR_INVALID_ARGUMENT);
    // Loaded again (same address, most likely): cudyn's own lookup makes it live again.
    Lib b(api == CUDYN_API_RUNTIME ? Loader::cudyn_runtime : Loader::cudyn_driver, two());
    run_two(b.k, api);
    b.unload();
  }
  std::printf("a raw lookup and an adopted kernel of a library cudyn unloaded: refused, no crash\n");
  return 0;
}

// Eight threads load (through cudyn's two APIs and raw CUDA's two), launch with results
// checked, and unload, all at once: addresses are reused across threads all the time.
static int eight_threads() {
  const int threads = 8, iters = 150;
  std::atomic<int> launches{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([t, &launches] {
      cudaStream_t s;
      CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int i = 0; i < iters; ++i) {
        Loader how = static_cast<Loader>((t + i) % 4);
        bool is_two = (t * 7 + i) % 2 == 0;
        Lib l(how, is_two ? two() : four());
        if (l.raw()) l.adopt();  // it may sit where a kernel cudyn unloaded was
        cudyn_api api = (i / 2) % 2 ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
        if (is_two) run_two(l.k, api, s); else run_four(l.k, api, s);
        l.unload();
        launches += is_two ? 2 : 1;
      }
      CHECK_RT(cudaStreamDestroy(s));
    });
  for (auto &t : ts) t.join();
  std::printf("8 threads x %d load/launch/unload: %d launches, every result correct, every mismatch refused\n",
              iters, launches.load());
  return 0;
}

// Two cudyn launches (runtime, then driver) captured into a graph, replayed twice.
static int stream_capture() {
  Lib l(Loader::cudyn_driver, two());
  auto x = random_floats(N, 3);
  DevBuf dx(x);
  int n = N;
  void *args[] = {&dx.p, &n};
  cudaStream_t s;
  CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) {
    cudyn_launch_config cfg = config_1d(N, 256, api, s);
    CHECK_CUDYN(cudyn_launch(l.k, &cfg, args, 2));
  }
  cudaGraph_t g;
  CHECK_RT(cudaStreamEndCapture(s, &g));
  size_t nodes = 0;
  CHECK_RT(cudaGraphGetNodes(g, nullptr, &nodes));
  EXPECT(nodes == 2, "%zu nodes captured", nodes);
  cudaGraphExec_t e;
  CHECK_RT(cudaGraphInstantiate(&e, g, 0));
  CHECK_RT(cudaGraphLaunch(e, s));
  CHECK_RT(cudaGraphLaunch(e, s));
  CHECK_RT(cudaStreamSynchronize(s));
  auto y = dx.get();
  for (int i = 0; i < N; ++i)
    if (y[i] != x[i] + 4.0f) FAIL("x[%d] = %g, want %g", i, y[i], x[i] + 4.0f);
  CHECK_RT(cudaGraphExecDestroy(e));
  CHECK_RT(cudaGraphDestroy(g));
  CHECK_RT(cudaStreamDestroy(s));
  l.unload();
  std::printf("stream capture: 2 cudyn launches (runtime, driver) in one graph, replayed twice: %d elements correct\n", N);
  return 0;
}

// cudaStreamPerThread and cudaStreamLegacy, through both APIs.
static int special_streams() {
  Lib l(Loader::cudyn_runtime, four());
  for (cudaStream_t s : {cudaStreamPerThread, cudaStreamLegacy})
    for (cudyn_api api : {CUDYN_API_RUNTIME, CUDYN_API_DRIVER}) run_four(l.k, api, s);
  l.unload();
  std::printf("cudaStreamPerThread and cudaStreamLegacy through both APIs: results correct\n");
  return 0;
}

// Issue 22, items 1 and 2, on the GPU: one thread asks cudyn about a kernel (its parameters,
// its name, its function, a launch refused for its argument count, a launch) while another
// unloads its library and loads one whose kernel of four parameters usually lands at the same
// address. Every answer is for a live kernel or a refusal of the dead one ("unloaded"); none
// reaches CUDA with the kernel being freed (the driver crashed there before: SIGSEGV inside
// cuKernelGetParamInfo and cuKernelGetFunction); and afterwards the new kernel is checked
// against its own four parameters. ROUNDS rounds per kind, both APIs in turn.
enum class Ask { params, name, function, validate, launch };
static const char *ask_name(Ask a) {
  switch (a) {
    case Ask::params: return "param_count";
    case Ask::name: return "name";
    case Ask::function: return "function";
    case Ask::validate: return "argument check";
    default: return "launch";
  }
}

static int query_unload_race() {
  const int rounds = std::getenv("ROUNDS") ? std::atoi(std::getenv("ROUNDS")) : 3000;
  DevBuf dx(16), da(16), db(16), dc(16);
  int zero = 0;
  void *two_args[] = {&dx.p, &zero};
  void *four_args[] = {&da.p, &db.p, &dc.p, &zero};
  for (Ask ask : {Ask::params, Ask::name, Ask::function, Ask::validate, Ask::launch}) {
    std::atomic<cudyn_kernel_t> current{nullptr};
    std::atomic<int> round_go{-1}, round_done{-1};
    std::atomic<long> answered{0}, refused{0};
    std::mutex wrong_mu;
    std::string wrong;
    std::thread asker([&] {
      cudaStream_t s;
      CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      for (int r = 0; r < rounds; ++r) {
        while (round_go.load() != r) std::this_thread::yield();
        cudyn_kernel_t k = current.load();
        cudyn_api api = r % 2 ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
        cudyn_launch_config cfg = config_1d(16, 16, api, s);
        for (int i = 0; i < 20; ++i) {
          cudyn_status st;
          bool ok_answer = true;
          switch (ask) {
            case Ask::params: {
              size_t n = 0;
              st = cudyn_kernel_param_count(k, &n);
              ok_answer = n == 2 || n == 4;  // the kernel loaded again may be there already
              break;
            }
            case Ask::name: {
              const char *nm = nullptr;  // CUDA's string, not read: its library may be gone
              st = cudyn_kernel_name(k, &nm);
              ok_answer = nm != nullptr;
              break;
            }
            case Ask::function: {
              cudyn_function_t f = nullptr;
              st = cudyn_kernel_function(k, &f);
              ok_answer = f != nullptr;
              break;
            }
            case Ask::validate:
              // Three arguments fit neither kernel: refused for its count, never launched.
              st = cudyn_launch(k, &cfg, four_args, 3);
              if (st == CUDYN_ERROR_ARGUMENT_MISMATCH) st = CUDYN_SUCCESS;
              break;
            default:
              st = cudyn_launch(k, &cfg, two_args, 2);
              if (st == CUDYN_ERROR_ARGUMENT_MISMATCH) st = CUDYN_SUCCESS;  // the four-parameter one
              break;
          }
          if (st == CUDYN_SUCCESS && ok_answer) {
            ++answered;
            continue;
          }
          if (st == CUDYN_ERROR_INVALID_ARGUMENT && std::strstr(cudyn_last_error_message(), "unloaded")) {
            ++refused;
            break;
          }
          std::lock_guard<std::mutex> g(wrong_mu);
          if (wrong.empty()) wrong = std::string(cudyn_status_string(st)) + ": " + cudyn_last_error_message();
          break;
        }
        round_done.store(r);
      }
      CHECK_RT(cudaStreamSynchronize(s));
      CHECK_RT(cudaStreamDestroy(s));
    });
    int reused = 0;
    for (int r = 0; r < rounds; ++r) {
      Loader how = r % 2 ? Loader::cudyn_driver : Loader::cudyn_runtime;
      cudyn_api api = r % 2 ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
      Lib a(how, two());
      current.store(a.k);
      round_go.store(r);
      for (volatile int spin = 0; spin < (r * 7919) % 20000; spin = spin + 1) {
      }
      a.unload();
      Lib b(how, four());
      while (round_done.load() != r) std::this_thread::yield();
      reused += b.k == a.k;
      // The new kernel is checked against its own four parameters, whatever was asked meanwhile.
      size_t n = 0;
      CHECK_CUDYN(cudyn_kernel_param_count(b.k, &n));
      EXPECT(n == 4, "round %d: the new kernel has %zu parameters, not 4 (an old layout kept)", r, n);
      cudyn_launch_config cfg = config_1d(16, 16, api);
      EXPECT_STATUS(cudyn_launch(b.k, &cfg, two_args, 2), CUDYN_ERROR_ARGUMENT_MISMATCH);
      CHECK_CUDYN(cudyn_launch(b.k, &cfg, four_args, 4));
      b.unload();
    }
    asker.join();
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(wrong.empty(), "%s while its library was unloaded: %s", ask_name(ask), wrong.c_str());
    std::printf("%-14s x %d rounds: %ld answers for the live kernel, %ld refusals of the dead one, "
                "new kernel at the same address %d times, no crash\n",
                ask_name(ask), rounds, answered.load(), refused.load(), reused);
  }
  return 0;
}

int main(int argc, char **argv) {
  const std::map<std::string, std::function<int()>> cases = {
      {"reuse_by_cudyn_load", reuse_by_cudyn_load},
      {"reuse_by_runtime_load", reuse_by_runtime_load},
      {"reuse_by_driver_load", reuse_by_driver_load},
      {"cudyn_load_after_foreign", cudyn_load_after_foreign},
      {"dead_handles", dead_handles},
      {"eight_threads", eight_threads},
      {"stream_capture", stream_capture},
      {"special_streams", special_streams},
      {"query_unload_race", query_unload_race},
      {"raw_lookups_die_with_the_unload", raw_lookups_die_with_the_unload},
  };
  if (argc < 2 || !cases.count(argv[1])) {
    std::fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  require_gpu();
  return cases.at(argv[1])();
}
