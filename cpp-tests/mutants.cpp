// Hostile images: >= 10,000 mutants of a real cubin and fatbin (bit flips, truncations, header
// sizes that lie, section tables pointing outside the file) fed to cudyn_library_load_data
// through both APIs. Each mutant sits at the very end of a mapping followed by a PROT_NONE
// guard page, so reading one byte past it faults. cudyn must never crash; every result is
// counted by status. For comparison the same mutants go to raw cuLibraryLoadData in child
// processes (a crash there costs only the child), and the crashes are counted.
//   usage: mutants <cubin> <fatbin> [count=10000] [--raw | --raw-only | --validate-only]
//          mutants <cubin> <fatbin> <count> --dump <i> <file>   (write mutant i to file)
//   env: MUTANTS_VERDICTS=file (every verdict, for diffing two builds), MUTANTS_TRACE, MUTANTS_FROM,
//        MUTANTS_RAW_JOBS (parallel raw shards, 8), MUTANTS_RAW_SECONDS (raw pass time cap, 240)
//   (internal: mutants <cubin> <fatbin> <count> --raw-child <first> <progress-file>)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <random>
#include "test_util.hpp"

// A buffer whose last byte is immediately followed by an unreadable page.
struct Guarded {
  char *base = nullptr;
  size_t map_len = 0;
  char *data = nullptr;
  explicit Guarded(const std::vector<char> &bytes) {
    long page = sysconf(_SC_PAGESIZE);
    size_t body = (bytes.size() + page - 1) / page * page;
    map_len = body + page;
    base = static_cast<char *>(mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base == MAP_FAILED) FAIL("mmap");
    mprotect(base + body, page, PROT_NONE);
    data = base + body - bytes.size();
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  }
  ~Guarded() { munmap(base, map_len); }
};

static void put32(std::vector<char> &v, size_t off, uint32_t x) { if (off + 4 <= v.size()) std::memcpy(&v[off], &x, 4); }
static void put64(std::vector<char> &v, size_t off, uint64_t x) { if (off + 8 <= v.size()) std::memcpy(&v[off], &x, 8); }
static void put16(std::vector<char> &v, size_t off, uint16_t x) { if (off + 2 <= v.size()) std::memcpy(&v[off], &x, 2); }

// Mutant i of the two originals: deterministic, so children can rebuild it from its index.
static std::vector<char> mutant(const std::vector<char> &cubin, const std::vector<char> &fatbin, int i) {
  std::mt19937_64 g(0x5eed0000ull + i);
  const bool is_fat = i % 2;
  std::vector<char> v = is_fat ? fatbin : cubin;
  const uint64_t lies[] = {0, 1, 0x7fffffffull, 0xffffffffull, 0xffffffffffffffffull, v.size() + 1, v.size() * 2, (uint64_t)1 << 40};
  uint64_t lie = lies[g() % 8];
  switch ((i / 2) % 6) {
    case 0: {  // bit flips
      int flips = 1 + g() % 8;
      for (int k = 0; k < flips; ++k) v[g() % v.size()] ^= (char)(1u << (g() % 8));
      break;
    }
    case 1:  // truncation
      v.resize(g() % v.size());
      break;
    case 2:  // the whole-image size field lies
      if (is_fat) put64(v, 8, lie);            // fatbin header: payload size
      else put64(v, 40, lie);                  // ELF e_shoff
      break;
    case 3:  // section / entry table lies
      if (is_fat) { put32(v, 16 + 4, (uint32_t)lie); put64(v, 16 + 8, lie); }  // first entry: header size, payload size
      else { put16(v, 60, (uint16_t)(g() % 0xffff)); put16(v, 58, (uint16_t)(g() % 256)); }  // e_shnum, e_shentsize
      break;
    case 4: {  // a section header points outside the file
      if (!is_fat && v.size() > 64) {
        uint64_t shoff = 0;
        std::memcpy(&shoff, &v[40], 8);
        uint16_t shnum = 0;
        std::memcpy(&shnum, &v[60], 2);
        if (shnum) {
          size_t sh = shoff + 64 * (g() % shnum);
          put64(v, sh + 24, lie);   // sh_offset
          put64(v, sh + 32, lie);   // sh_size
        }
      } else {
        for (int k = 0; k < 4; ++k) put32(v, g() % (v.size() - 4), (uint32_t)g());
      }
      break;
    }
    default: {  // random bytes spliced over the header
      size_t n = std::min<size_t>(v.size(), 16 + g() % 112);
      for (size_t k = 0; k < n; ++k) v[g() % std::min<size_t>(v.size(), 256)] = (char)g();
      break;
    }
  }
  return v;
}

static int raw_child(const std::vector<char> &cubin, const std::vector<char> &fatbin, int first, int count, const char *progress) {
  CHECK_RT(cudaFree(nullptr));
  auto load = DRIVER(cuLibraryLoadData);
  auto unload = DRIVER(cuLibraryUnload);
  FILE *p = std::fopen(progress, "w");
  for (int i = first; i < count; ++i) {
    std::rewind(p);
    std::fprintf(p, "%d\n", i);
    std::fflush(p);
    auto m = mutant(cubin, fatbin, i);
    Guarded g(m);
    CUlibrary lib = nullptr;
    if (load(&lib, g.data, nullptr, nullptr, 0, nullptr, nullptr, 0) == CUDA_SUCCESS) unload(lib);
  }
  std::fclose(p);
  return 0;
}

// Raw cuLibraryLoadData on the same mutants, in child processes: a crash costs only the child,
// is counted, and a new child resumes after the crashing mutant. The mutants are split into
// MUTANTS_RAW_JOBS contiguous shards (default 8) run side by side, and the pass stops at
// MUTANTS_RAW_SECONDS (default 240): a capped run reports how far it got, not nothing.
static void raw_pass(char **argv, int count) {
  const int jobs = std::max(1, std::getenv("MUTANTS_RAW_JOBS") ? std::atoi(std::getenv("MUTANTS_RAW_JOBS")) : 8);
  const double budget = std::getenv("MUTANTS_RAW_SECONDS") ? std::atof(std::getenv("MUTANTS_RAW_SECONDS")) : 240.0;
  struct Shard { int begin, next, end; pid_t pid; std::string progress; };
  std::vector<Shard> shards;
  for (int j = 0; j < jobs; ++j) {
    int lo = (int)((long)count * j / jobs), hi = (int)((long)count * (j + 1) / jobs);
    shards.push_back({lo, lo, hi, -1, "/tmp/cudyn_mutants_progress_" + std::to_string(getpid()) + "_" + std::to_string(j)});
  }
  auto read_progress = [](const Shard &sh, int fallback) {
    int at = fallback;
    if (FILE *p = std::fopen(sh.progress.c_str(), "r")) { if (std::fscanf(p, "%d", &at) != 1) at = fallback; std::fclose(p); }
    return at;
  };
  auto start = [&](Shard &sh) {
    std::remove(sh.progress.c_str());
    pid_t pid = fork();
    if (pid == 0) {
      execl(argv[0], argv[0], argv[1], argv[2], std::to_string(sh.end).c_str(), "--raw-child", std::to_string(sh.next).c_str(), sh.progress.c_str(), (char *)nullptr);
      _exit(127);
    }
    sh.pid = pid;
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int crashes = 0, children = 0, running = 0;
  std::map<int, int> signals;
  std::vector<int> crashed_at;
  for (auto &sh : shards) if (sh.next < sh.end) { start(sh); children++; running++; }
  bool capped = false;
  while (running > 0) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid == 0) {
      if (elapsed() > budget) {  // out of time: stop every child where it is
        capped = true;
        for (auto &sh : shards) if (sh.pid > 0) kill(sh.pid, SIGKILL);
        for (auto &sh : shards) if (sh.pid > 0) { waitpid(sh.pid, &st, 0); sh.next = read_progress(sh, sh.next); sh.pid = -1; running--; }
        break;
      }
      usleep(20000);
      continue;
    }
    if (pid < 0) break;
    Shard *sh = nullptr;
    for (auto &x : shards) if (x.pid == pid) sh = &x;
    if (!sh) continue;
    sh->pid = -1;
    running--;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) { sh->next = sh->end; continue; }
    int at = read_progress(*sh, sh->next);
    crashes++;
    crashed_at.push_back(at);
    signals[WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st)]++;
    sh->next = at + 1;
    if (sh->next < sh->end) { start(*sh); children++; running++; }
  }
  int covered = 0;
  for (auto &sh : shards) {
    covered += sh.next - sh.begin;
    std::remove(sh.progress.c_str());
  }
  std::sort(crashed_at.begin(), crashed_at.end());
  std::printf("raw cuLibraryLoadData: %d of %d mutants tried in %.0f s%s (%d shards, %d child processes): %d crashed the process",
              covered, count, elapsed(), capped ? ", stopped at the time cap" : "", jobs, children, crashes);
  for (auto &kv : signals) std::printf("; %s %d: %d", kv.first > 0 ? "signal" : "exit", kv.first > 0 ? kv.first : -kv.first, kv.second);
  std::printf("\n");
  static const char *kinds[] = {"bit flips", "truncation", "size field lies", "table lies", "section outside", "header noise"};
  std::map<std::string, int> by_kind;
  for (int i : crashed_at) by_kind[std::string(i % 2 ? "fatbin " : "cubin ") + kinds[(i / 2) % 6]]++;
  for (auto &kv : by_kind) std::printf("  raw crashes, %s: %d\n", kv.first.c_str(), kv.second);
  std::printf("  first crashing mutants:");
  for (size_t j = 0; j < crashed_at.size() && j < 40; ++j) std::printf(" %d", crashed_at[j]);
  std::printf("\n");
}

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run stopped from outside keeps what it printed
  if (argc < 3) FAIL("usage: %s <cubin> <fatbin> [count] [--raw]", argv[0]);
  auto cubin = read_file(argv[1]);
  auto fatbin = read_file(argv[2]);
  const int count = argc > 3 ? std::atoi(argv[3]) : 10000;
  if (argc > 6 && std::strcmp(argv[4], "--dump") == 0) {  // write mutant argv[5] to argv[6]
    auto m = mutant(cubin, fatbin, std::atoi(argv[5]));
    FILE *f = std::fopen(argv[6], "wb");
    std::fwrite(m.data(), 1, m.size(), f);
    std::fclose(f);
    return 0;
  }
  if (argc > 6 && std::strcmp(argv[4], "--raw-child") == 0) return raw_child(cubin, fatbin, std::atoi(argv[5]), count, argv[6]);
  const bool raw_only = argc > 4 && std::strcmp(argv[4], "--raw-only") == 0;
  const bool raw = raw_only || (argc > 4 && std::strcmp(argv[4], "--raw") == 0);
  // --validate-only: no GPU needed; every mutant still goes through cudyn's checks (which end
  // in DRIVER_NOT_FOUND / NO_DEVICE where an image passes them).
  const bool cpu = argc > 4 && std::strcmp(argv[4], "--validate-only") == 0;
  if (!cpu) require_gpu();

  std::map<std::string, int> by_status[2];
  // MUTANTS_TRACE=file records the mutant in flight (to find one that crashes);
  // MUTANTS_FROM=n starts there.
  FILE *trace = std::getenv("MUTANTS_TRACE") ? std::fopen(std::getenv("MUTANTS_TRACE"), "w") : nullptr;
  const int from = std::getenv("MUTANTS_FROM") ? std::atoi(std::getenv("MUTANTS_FROM")) : 0;
  // MUTANTS_VERDICTS=file writes one line per mutant per API: index, API, status, message, so
  // two builds of cudyn can be compared verdict for verdict (diff the files).
  FILE *verdicts = std::getenv("MUTANTS_VERDICTS") ? std::fopen(std::getenv("MUTANTS_VERDICTS"), "w") : nullptr;
  if (std::getenv("MUTANTS_VERDICTS") && !verdicts) FAIL("cannot write %s", std::getenv("MUTANTS_VERDICTS"));
  for (int i = from; i < (raw_only ? 0 : count); ++i) {
    if (trace) { std::rewind(trace); std::fprintf(trace, "%d\n", i); std::fflush(trace); }
    auto m = mutant(cubin, fatbin, i);
    Guarded g(m);
    for (int a = 0; a < 2; ++a) {
      cudyn_api api = a ? CUDYN_API_DRIVER : CUDYN_API_RUNTIME;
      cudyn_library_t lib = nullptr;
      cudyn_status s = cudyn_library_load_data(g.data, m.size(), api, &lib);
      by_status[a][cudyn_status_string(s)]++;
      if (verdicts) {
        const char *msg = s == CUDYN_SUCCESS ? "" : cudyn_last_error_message();
        std::fprintf(verdicts, "%d %s %s ", i, a ? "driver" : "runtime", cudyn_status_string(s));
        for (const char *c = msg ? msg : "(null)"; *c; ++c) {  // one line per verdict
          if (*c == '\n') std::fputs("\\n", verdicts);
          else std::fputc(*c, verdicts);
        }
        std::fputc('\n', verdicts);
      }
      if (s == CUDYN_SUCCESS) CHECK_CUDYN(cudyn_library_unload(lib, api));
    }
  }
  if (verdicts) std::fclose(verdicts);
  if (!raw_only) {
    std::printf("cudyn: %d mutants (cubin and fatbin, alternating) x 2 APIs, 0 crashes\n", count);
    for (int a = 0; a < 2; ++a) {
      std::printf("  through the %s:\n", a ? "driver" : "runtime");
      for (auto &kv : by_status[a]) std::printf("    %6d  %s\n", kv.second, kv.first.c_str());
    }
    if (cpu) return 0;
    // After all that, the GPU still works: a clean load and launch.
    cudyn_library_t lib;
    CHECK_CUDYN(cudyn_library_load_data(fatbin.data(), fatbin.size(), CUDYN_API_DRIVER, &lib));
    cudyn_kernel_t k;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "add_one", CUDYN_API_DRIVER, &k));
    DevBuf d(std::vector<float>(1024, 1.0f));
    int n = 1024;
    void *args[] = {&d.p, &n};
    cudyn_launch_config cfg = config_1d(n, 256, CUDYN_API_RUNTIME);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 2));
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(d.get()[1023] == 2.0f, "GPU unusable after the mutants");
    CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
    std::printf("  afterwards: a clean load + launch works\n");
  }
  if (raw) raw_pass(argv, count);
  return 0;
}
