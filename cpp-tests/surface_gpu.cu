// The loading and launch surface on a real GPU (issue 23): contexts left as they were, every
// launch attribute through both APIs, occupancy against CUDA's own answers, the JIT options,
// the interop calls. One case per ctest test (argv[1]); each prints what it saw.
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include "test_util.hpp"
#include "cudyn.hpp"

static const cudyn_api kApis[] = {CUDYN_API_RUNTIME, CUDYN_API_DRIVER};

// A kernel of this program, for cudyn_kernel_of (static runtime: cudyn's runtime does not know it).
__global__ void program_kernel(int *out) { out[threadIdx.x] = 7; }

struct IntBuf {
  int *p = nullptr;
  size_t n;
  explicit IntBuf(size_t count) : n(count) {
    CHECK_RT(cudaMalloc(reinterpret_cast<void **>(&p), n * sizeof(int)));
    CHECK_RT(cudaMemset(p, 0, n * sizeof(int)));
  }
  ~IntBuf() { cudaFree(p); }
  std::vector<int> get() const {
    std::vector<int> h(n);
    CHECK_RT(cudaMemcpy(h.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost));
    return h;
  }
};

static cudyn_library_t load_fatbin(cudyn_api api) {
  auto bytes = read_file(FATBIN_PATH);
  cudyn_library_t lib = nullptr;
  CHECK_CUDYN(cudyn_library_load_data(bytes.data(), bytes.size(), api, &lib));
  return lib;
}

static cudyn_kernel_t get(cudyn_library_t lib, const char *name, cudyn_api api) {
  cudyn_kernel_t k = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, name, api, &k));
  return k;
}

static cudyn_launch_attribute attr(cudyn_launch_attribute_id id) {
  cudyn_launch_attribute a;
  std::memset(&a, 0, sizeof a);
  a.id = id;
  return a;
}

static cudyn_launch_config with(cudyn_launch_config c, cudyn_launch_attribute *list, unsigned n) {
  c.attributes.attrs = list;
  c.attributes.count = n;
  return c;
}

// fill(out, v, n) launched as `cfg`, checked.
static void fill_checked(cudyn_kernel_t fill, cudyn_launch_config cfg, int v, const char *what) {
  IntBuf out(256);
  int n = 256;
  void *args[] = {&out.p, &v, &n};
  cfg.grid = {1, 1, 1};
  cfg.block = {256, 1, 1};
  cudyn_status s = cudyn_launch(fill, &cfg, args, 3);
  if (s != CUDYN_SUCCESS) FAIL("%s (%s): %s", what, api_name(cfg.api), cudyn_last_error_message());
  CHECK_RT(cudaStreamSynchronize(cfg.stream));
  auto h = out.get();
  for (int i = 0; i < 256; ++i)
    if (h[i] != v) FAIL("%s (%s): out[%d] = %d, want %d", what, api_name(cfg.api), i, h[i], v);
  std::printf("%s, %s: launched, result correct\n", api_name(cfg.api), what);
}

// ---- contexts -------------------------------------------------------------------------------

static int contexts() {
  auto cuCtxGetCurrent_ = DRIVER(cuCtxGetCurrent);
  auto cuDevicePrimaryCtxGetState_ = DRIVER(cuDevicePrimaryCtxGetState, 7000);
  unsigned flags = 0;
  int active0 = -1;
  CHECK_CU(cuDevicePrimaryCtxGetState_(0, &flags, &active0));
  std::printf("device 0's primary context before: %s\n", active0 ? "active" : "inactive");
  auto ptx = read_file(PTX_PATH);
  std::atomic<int> stage{0};
  std::string why;
  void *global = nullptr;
  std::thread t([&] {
    auto none_current = [&](const char *after) {
      CUcontext cur = reinterpret_cast<CUcontext>(1);
      if (cuCtxGetCurrent_(&cur) != CUDA_SUCCESS || cur != nullptr) {
        why = std::string("a context is current after ") + after;
        return false;
      }
      return true;
    };
    auto active = [&] {
      unsigned f = 0;
      int a = -1;
      cuDevicePrimaryCtxGetState_(0, &f, &a);
      return a;
    };
    if (!none_current("nothing")) return;
    cudyn_library_t lib = nullptr;
    if (cudyn_library_load_data(ptx.data(), ptx.size(), CUDYN_API_DRIVER, &lib) != CUDYN_SUCCESS) {
      why = cudyn_last_error_message();
      return;
    }
    stage = 1;
    if (!none_current("a PTX load (JIT in device 0's primary context)")) return;
    if (active() != active0) { why = "the PTX load left device 0's primary context retained"; return; }
    cudyn_kernel_t k = nullptr, g = nullptr;
    const char *name = nullptr;
    size_t params = 0;
    int regs = 0, blocks = 0;
    if (cudyn_library_get_kernel(lib, "set_global", CUDYN_API_DRIVER, &g) != CUDYN_SUCCESS ||
        cudyn_library_get_kernel(lib, "fill", CUDYN_API_DRIVER, &k) != CUDYN_SUCCESS ||
        cudyn_kernel_name(k, &name) != CUDYN_SUCCESS || cudyn_kernel_param_count(k, &params) != CUDYN_SUCCESS ||
        cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_NUM_REGS, 0, &regs) != CUDYN_SUCCESS ||
        cudyn_occupancy_max_active_blocks(k, 0, 256, 0, CUDYN_OCCUPANCY_DEFAULT, &blocks) != CUDYN_SUCCESS) {
      why = cudyn_last_error_message();
      return;
    }
    stage = 2;
    if (!none_current("queries")) return;
    if (active() != active0) { why = "a query left device 0's primary context retained"; return; }
    if (params != 3 || blocks < 1) { why = "wrong query answers"; return; }
    size_t bytes = 0;
    if (cudyn_library_get_global(lib, "g_out", &global, &bytes) != CUDYN_SUCCESS) { why = cudyn_last_error_message(); return; }
    stage = 3;
    if (!none_current("cudyn_library_get_global")) return;
    if (active() != 1) { why = "get_global: the context its address lives in is not retained"; return; }
    int v = 42;
    void *args[] = {&v};
    cudyn_launch_config cfg = config_1d(1, 32, CUDYN_API_DRIVER);
    if (cudyn_launch(g, &cfg, args, 1) != CUDYN_SUCCESS) { why = cudyn_last_error_message(); return; }
    stage = 4;
    if (!none_current("a driver launch on the NULL stream")) return;
    cudyn_function_t f = nullptr;
    if (cudyn_kernel_function(k, &f) != CUDYN_SUCCESS || !f) { why = cudyn_last_error_message(); return; }
    if (!none_current("cudyn_kernel_function")) return;
    stage = 5;
  });
  t.join();
  EXPECT(stage == 5, "stage %d: %s", stage.load(), why.c_str());
  // The launch ran in device 0's primary context, the runtime's too.
  CHECK_RT(cudaDeviceSynchronize());
  int h = 0;
  CHECK_RT(cudaMemcpy(&h, global, sizeof h, cudaMemcpyDeviceToHost));
  EXPECT(h == 42, "the driver launch wrote %d", h);
  std::printf("contexts: a thread without one was left without one after a PTX load, queries, occupancy, "
              "get_global, a driver launch and kernel_function; device 0's primary context was retained only "
              "from get_global on (active=%d before)\n", active0);
  return 0;
}

// ---- launch attributes ------------------------------------------------------------------------

static int launch_attributes() {
  int sms = 0, window = 0, least = 0, greatest = 0;
  CHECK_RT(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK_RT(cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, 0));
  CHECK_RT(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t high = nullptr;
  CHECK_RT(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  for (cudyn_api api : kApis) {
    cudyn_library_t lib = load_fatbin(CUDYN_API_RUNTIME);
    cudyn_kernel_t fill = get(lib, "fill", CUDYN_API_RUNTIME);
    cudyn_launch_config base = config_1d(256, 256, api);
    // Priority 0 (the lowest) on a high-priority stream: only the attribute can ask for it.
    cudyn_launch_attribute a[4];
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
    a[0].value.priority = 0;
    cudyn_launch_config c = with(base, a, 1);
    c.stream = high;
    fill_checked(fill, c, 1, "priority 0 on a high-priority stream");
    // Access policy window over a buffer.
    IntBuf win(1 << 16);
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
    a[0].value.access_policy_window.base_ptr = win.p;
    a[0].value.access_policy_window.num_bytes = std::min<size_t>(window, win.n * sizeof(int));
    a[0].value.access_policy_window.hit_ratio = 0.6f;
    a[0].value.access_policy_window.hit_prop = CUDYN_ACCESS_PROPERTY_PERSISTING;
    a[0].value.access_policy_window.miss_prop = CUDYN_ACCESS_PROPERTY_STREAMING;
    fill_checked(fill, with(base, a, 1), 2, "access policy window");
    // Memory sync domain and its map.
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP);
    a[0].value.mem_sync_domain_map.default_ = 0;
    a[0].value.mem_sync_domain_map.remote = 1;
    a[1] = attr(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
    a[1].value.mem_sync_domain = CUDYN_MEM_SYNC_DOMAIN_REMOTE;
    fill_checked(fill, with(base, a, 2), 3, "memory sync domain (remote) and map");
    // Shared memory carveout and NVLink-centric scheduling (hints).
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
    a[0].value.shared_mem_carveout = 50;
    a[1] = attr(CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING);
    a[1].value.nvlink_util_centric_scheduling = 1;
    fill_checked(fill, with(base, a, 2), 4, "carveout 50% and NVLink-centric scheduling");
    // Launch completion event.
    cudaEvent_t ev = nullptr;
    CHECK_RT(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT);
    a[0].value.launch_completion_event.event = ev;
    fill_checked(fill, with(base, a, 1), 5, "launch completion event");
    CHECK_RT(cudaEventSynchronize(ev));
    // Clusters: a regular shape of 2 and a preferred one of 4, spread.
    cudyn_kernel_t sizes = get(lib, "cluster_sizes", CUDYN_API_RUNTIME);
    IntBuf out(64);
    void *sargs[] = {&out.p};
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    a[0].value.cluster_dim = {2, 1, 1};
    a[1] = attr(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION);
    a[1].value.preferred_cluster_dim = {4, 1, 1};
    a[2] = attr(CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
    a[2].value.cluster_scheduling_policy_preference = CUDYN_CLUSTER_SCHEDULING_POLICY_SPREAD;
    cudyn_launch_config cc = with(config_1d(64 * 32, 32, api), a, 3);
    CHECK_CUDYN(cudyn_launch(sizes, &cc, sargs, 1));
    CHECK_RT(cudaDeviceSynchronize());
    auto cs = out.get();
    int fours = 0;
    for (int i = 0; i < 64; ++i) {
      EXPECT(cs[i] == 2 || cs[i] == 4, "%s: block %d ran in a cluster of %d", api_name(api), i, cs[i]);
      fours += cs[i] == 4;
    }
    std::printf("%s, cluster 2 with preferred 4 (spread): every block in a cluster of 2 or 4 (%d of 64 in 4s)\n",
                api_name(api), fours);
    // Cooperative, as an attribute.
    cudyn_kernel_t coop = get(lib, "coop_count", CUDYN_API_RUNTIME);
    IntBuf partial(1), total(1);
    void *cargs[] = {&partial.p, &total.p};
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE);
    a[0].value.cooperative = 1;
    cudyn_launch_config co = with(config_1d(sms * 128, 128, api), a, 1);
    CHECK_CUDYN(cudyn_launch(coop, &co, cargs, 2));
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(total.get()[0] == sms, "%s: cooperative count %d, want %d", api_name(api), total.get()[0], sms);
    std::printf("%s, cooperative (attribute): grid-wide sync over %d blocks\n", api_name(api), sms);
    // Programmatic dependent launch: a programmatic event on the producer, serialization
    // allowed on the consumer.
    cudyn_kernel_t prod = get(lib, "pdl_producer", CUDYN_API_RUNTIME), cons = get(lib, "pdl_consumer", CUDYN_API_RUNTIME);
    const int n = 4096;
    IntBuf buf(n), sum(1);
    int nn = n;
    cudaStream_t s = nullptr;
    CHECK_RT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t pe = nullptr;
    CHECK_RT(cudaEventCreateWithFlags(&pe, cudaEventDisableTiming));
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT);
    a[0].value.programmatic_event.event = pe;
    a[0].value.programmatic_event.trigger_at_block_start = 0;
    cudyn_launch_config pc = with(config_1d(n, 256, api, s), a, 1);
    void *pargs[] = {&buf.p, &nn};
    CHECK_CUDYN(cudyn_launch(prod, &pc, pargs, 2));
    a[1] = attr(CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    a[1].value.programmatic_stream_serialization_allowed = 1;
    cudyn_launch_config cc2 = with(config_1d(n, 256, api, s), &a[1], 1);
    void *qargs[] = {&buf.p, &sum.p, &nn};
    CHECK_CUDYN(cudyn_launch(cons, &cc2, qargs, 3));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaEventSynchronize(pe));
    EXPECT(sum.get()[0] == n * (n + 1) / 2, "%s: consumer sum %d", api_name(api), sum.get()[0]);
    std::printf("%s, programmatic event + programmatic stream serialization: the consumer saw the producer's writes\n",
                api_name(api));
    // Device-updatable node: only in a capturing stream; the node comes back in the entry.
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE);
    a[0].value.device_updatable_kernel_node.device_updatable = 1;
    IntBuf cap(256);
    int v = 9, m = 256;
    void *fargs[] = {&cap.p, &v, &m};
    cudyn_launch_config dc = with(config_1d(256, 256, api, s), a, 1);
    cudyn_status st = cudyn_launch(fill, &dc, fargs, 3);
    // CUDA refuses it outside a capture (which code is CUDA's to choose; nothing is launched).
    EXPECT(st != CUDYN_SUCCESS && cudyn_last_cuda_error() != 0, "%s: a device-updatable node outside a capture: %s",
           api_name(api), cudyn_status_string(st));
    std::printf("%s, device-updatable node outside a capture: %s (CUDA %d)\n", api_name(api), cudyn_status_string(st),
                cudyn_last_cuda_error());
    CHECK_RT(cudaGetLastError());
    CHECK_RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    st = cudyn_launch(fill, &dc, fargs, 3);
    cudaGraph_t graph = nullptr;
    CHECK_RT(cudaStreamEndCapture(s, &graph));
    EXPECT(st == CUDYN_SUCCESS, "%s: captured device-updatable launch: %s", api_name(api), cudyn_last_error_message());
    EXPECT(a[0].value.device_updatable_kernel_node.dev_node != nullptr, "%s: no node handed back", api_name(api));
    std::printf("%s, device-updatable node in a capture: node %p handed back\n", api_name(api),
                (void *)a[0].value.device_updatable_kernel_node.dev_node);
    CHECK_RT(cudaGraphDestroy(graph));
    // Refusals: cudyn's (a duplicate) and CUDA's (a cluster of 16 blocks without the
    // non-portable size allowed, CUDA_ERROR_INVALID_CLUSTER_SIZE: an invalid argument).
    a[0] = attr(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
    a[1] = attr(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
    cudyn_launch_config dup = with(base, a, 2);
    EXPECT_STATUS(cudyn_launch(fill, &dup, fargs, 3), CUDYN_ERROR_INVALID_ARGUMENT);
    std::printf("%s, a duplicate: %s\n", api_name(api), cudyn_last_error_message());
    cudyn_launch_config big = config_1d(16 * 32, 32, api);
    big.cluster = {16, 1, 1};
    st = cudyn_launch(sizes, &big, sargs, 1);
    EXPECT(st == CUDYN_ERROR_INVALID_ARGUMENT, "%s: a cluster of 16: %s (CUDA %d) %s", api_name(api), cudyn_status_string(st),
           cudyn_last_cuda_error(), cudyn_last_error_message());
    std::printf("%s, a cluster of 16: %s, CUDA %d\n", api_name(api), cudyn_status_string(st), cudyn_last_cuda_error());
    CHECK_RT(cudaGetLastError());
    CHECK_RT(cudaEventDestroy(ev));
    CHECK_RT(cudaEventDestroy(pe));
    CHECK_RT(cudaStreamDestroy(s));
    CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_RUNTIME));
  }
  CHECK_RT(cudaStreamDestroy(high));
  return 0;
}

// ---- occupancy --------------------------------------------------------------------------------

static size_t four_per_thread(int block) { return static_cast<size_t>(block) * sizeof(int); }
static size_t four_per_thread_user(int block, void *user) {
  ++*static_cast<int *>(user);
  return four_per_thread(block);
}

static int occupancy() {
  auto cuKernelGetFunction_ = DRIVER(cuKernelGetFunction, 12000);
  auto blocks_ = DRIVER(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, 7000);
  auto size_ = DRIVER(cuOccupancyMaxPotentialBlockSizeWithFlags, 7000);
  auto smem_ = DRIVER(cuOccupancyAvailableDynamicSMemPerBlock, 10020);
  auto cluster_ = DRIVER(cuOccupancyMaxPotentialClusterSize, 11070);
  auto clusters_ = DRIVER(cuOccupancyMaxActiveClusters, 11070);
  CHECK_RT(cudaFree(nullptr));  // the runtime's primary context is current here: CUDA's reference answers
  cudyn_library_t lib = load_fatbin(CUDYN_API_DRIVER);
  for (const char *name : {"smem_per_thread", "heavy"}) {
    cudyn_kernel_t k = get(lib, name, CUDYN_API_DRIVER);
    CUfunction f = nullptr;
    CHECK_CU(cuKernelGetFunction_(&f, k));
    for (unsigned flags : {0u, 1u}) {
      for (int block : {32, 128, 256, 1024}) {
        int raw = -1, ours = -1;
        CHECK_CU(blocks_(&raw, f, block, 1024, flags));
        CHECK_CUDYN(cudyn_occupancy_max_active_blocks(k, 0, block, 1024, flags, &ours));
        EXPECT(raw == ours, "%s block %d flags %u: CUDA %d, cudyn %d", name, block, flags, raw, ours);
      }
      int rg = 0, rb = 0, g = 0, b = 0;
      CHECK_CU(size_(&rg, &rb, f, nullptr, 2048, 0, flags));
      CHECK_CUDYN(cudyn_occupancy_max_potential_block_size(k, 0, 2048, nullptr, nullptr, 0, flags, &g, &b));
      EXPECT(rg == g && rb == b, "%s fixed: CUDA %d/%d, cudyn %d/%d", name, rg, rb, g, b);
      int calls = 0;
      CHECK_CU(size_(&rg, &rb, f, four_per_thread, 0, 512, flags));
      CHECK_CUDYN(cudyn_occupancy_max_potential_block_size(k, 0, 0, four_per_thread_user, &calls, 512, flags, &g, &b));
      EXPECT(rg == g && rb == b && calls > 0, "%s callback: CUDA %d/%d, cudyn %d/%d (%d calls)", name, rg, rb, g, b, calls);
      std::printf("%s, flags %u: block size %d, min grid %d (callback asked %d times), same as CUDA's\n", name, flags, b,
                  g, calls);
    }
    size_t rs = 0, s = 0;
    CHECK_CU(smem_(&rs, f, 2, 256));
    CHECK_CUDYN(cudyn_occupancy_available_dynamic_smem(k, 0, 2, 256, &s));
    EXPECT(rs == s, "%s smem: CUDA %zu, cudyn %zu", name, rs, s);
    // C++: a lambda.
    auto sug = cudyn::kernel(k).max_potential_block_size([](int bs) { return static_cast<size_t>(bs) * sizeof(int); }, 0, 512);
    int rg2 = 0, rb2 = 0;
    CHECK_CU(size_(&rg2, &rb2, f, four_per_thread, 0, 512, 0));
    EXPECT(sug.block_size == rb2 && sug.min_grid_size == rg2, "C++ lambda %d/%d, CUDA %d/%d", sug.block_size,
           sug.min_grid_size, rb2, rg2);
  }
  // Clusters, with the NULL stream (the current context's).
  cudyn_kernel_t k = get(lib, "cluster_sizes", CUDYN_API_DRIVER);
  CUfunction f = nullptr;
  CHECK_CU(cuKernelGetFunction_(&f, k));
  CUlaunchConfig rc{};
  rc.gridDimX = 64;
  rc.gridDimY = rc.gridDimZ = 1;
  rc.blockDimX = 128;
  rc.blockDimY = rc.blockDimZ = 1;
  int raw = -1, ours = -1;
  CHECK_CU(cluster_(&raw, f, &rc));
  cudyn_launch_config cfg = config_1d(64 * 128, 128, CUDYN_API_DRIVER);
  CHECK_CUDYN(cudyn_occupancy_max_potential_cluster_size(k, 0, &cfg, &ours));
  EXPECT(raw == ours && ours >= 1, "max cluster size: CUDA %d, cudyn %d", raw, ours);
  CUlaunchAttribute ca{};
  ca.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  ca.value.clusterDim.x = 2;
  ca.value.clusterDim.y = ca.value.clusterDim.z = 1;
  rc.attrs = &ca;
  rc.numAttrs = 1;
  int rn = -1, n = -1;
  CHECK_CU(clusters_(&rn, f, &rc));
  cfg.cluster = {2, 1, 1};
  CHECK_CUDYN(cudyn_occupancy_max_active_clusters(k, 0, &cfg, &n));
  EXPECT(rn == n && n > 0, "active clusters of 2: CUDA %d, cudyn %d", rn, n);
  std::printf("clusters: largest %d blocks, %d clusters of 2 at once, same as CUDA's\n", ours, n);
  // A launch sized from it: the suggested block, a grid for n elements, the callback's shared memory.
  cudyn_kernel_t sp = get(lib, "smem_per_thread", CUDYN_API_DRIVER);
  const int count = 100000;
  cudyn_launch_config sized{};
  int calls = 0;
  CHECK_CUDYN(cudyn_launch_config_for_occupancy(sp, 0, count, 0, four_per_thread_user, &calls, &sized));
  EXPECT(sized.grid.x == (count + sized.block.x - 1) / sized.block.x && sized.shared_mem_bytes == sized.block.x * sizeof(int),
         "grid %u block %u smem %zu", sized.grid.x, sized.block.x, sized.shared_mem_bytes);
  IntBuf out(count);
  int nn = count;
  void *args[] = {&out.p, &nn};
  for (cudyn_api api : kApis) {
    sized.api = api;
    CHECK_CUDYN(cudyn_launch(sp, &sized, args, 2));
    CHECK_RT(cudaDeviceSynchronize());
    auto h = out.get();
    for (int i = 0; i < count; ++i)
      if (h[i] != 2 * i) FAIL("%s: out[%d] = %d", api_name(api), i, h[i]);
  }
  std::printf("a launch sized for occupancy: %u blocks of %u, %zu bytes of shared memory each; result correct, both APIs\n",
              sized.grid.x, sized.block.x, sized.shared_mem_bytes);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  return 0;
}

// ---- JIT options ------------------------------------------------------------------------------

static cudyn_status load_ptx(cudyn_api api, std::initializer_list<cudyn_load_option> opts, cudyn_library_t *lib) {
  auto ptx = read_file(PTX_PATH);
  return cudyn_library_load_data_ex(ptx.data(), ptx.size(), api, opts.size() ? opts.begin() : nullptr, opts.size(), lib,
                                    nullptr);
}

static int kernel_attr(cudyn_library_t lib, cudyn_api api, const char *name, cudyn_kernel_attribute a) {
  int v = -1;
  CHECK_CUDYN(cudyn_kernel_get_attribute(get(lib, name, api), a, 0, &v));
  return v;
}

// The CACHE_MODE_CA attribute of a kernel of a library the test loaded itself: adopted for the
// query (it may sit where a kernel of a library cudyn unloaded was, which cudyn refuses unless
// the program vouches for the handle), released before its library goes.
static int adopted_cache_mode_ca(cudyn_kernel_t k) {
  int v = -1;
  CHECK_CUDYN(cudyn_kernel_adopt(k));
  CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_CACHE_MODE_CA, 0, &v));
  CHECK_CUDYN(cudyn_kernel_release(k));
  return v;
}

// The CACHE_MODE_CA attribute of `heavy` after CUDA's own load of the PTX with CU_JIT_CACHE_MODE
// (cudaJitCacheMode) `mode`, through `api`.
static int raw_cache_mode_ca(cudyn_api api, int mode) {
  auto ptx = read_file(PTX_PATH);
  ptx.push_back('\0');
  int v = -1;
  if (api == CUDYN_API_RUNTIME) {
    cudaLibrary_t lib = nullptr;
    cudaJitOption opt = cudaJitCacheMode;
    void *value = (void *)(intptr_t)mode;
    CHECK_RT(cudaLibraryLoadData(&lib, ptx.data(), &opt, &value, 1, nullptr, nullptr, 0));
    cudaKernel_t k = nullptr;
    CHECK_RT(cudaLibraryGetKernel(&k, lib, "heavy"));
    v = adopted_cache_mode_ca((cudyn_kernel_t)k);
    CHECK_RT(cudaLibraryUnload(lib));
  } else {
    auto load = DRIVER(cuLibraryLoadData);
    auto kernel = DRIVER(cuLibraryGetKernel);
    auto unload = DRIVER(cuLibraryUnload);
    CUlibrary lib = nullptr;
    CUjit_option opt = CU_JIT_CACHE_MODE;
    void *value = (void *)(intptr_t)mode;
    if (load(&lib, ptx.data(), &opt, &value, 1, nullptr, nullptr, 0) != CUDA_SUCCESS) FAIL("raw cuLibraryLoadData");
    CUkernel k = nullptr;
    if (kernel(&k, lib, "heavy") != CUDA_SUCCESS) FAIL("raw cuLibraryGetKernel");
    v = adopted_cache_mode_ca((cudyn_kernel_t)k);
    unload(lib);
  }
  return v;
}

static int jit_options() {
  for (cudyn_api api : kApis) {
    cudyn_library_t lib = nullptr;
    float ms = -1.f;
    CHECK_CUDYN(load_ptx(api, {{CUDYN_LOAD_OPTION_WALL_TIME, (int64_t)(intptr_t)&ms}}, &lib));
    EXPECT(ms >= 0.f, "%s: wall time %g", api_name(api), ms);
    std::printf("%s: WALL_TIME: the JIT took %.3f ms\n", api_name(api), ms);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    // What the kernel's CACHE_MODE_CA attribute reads after a load with each mode must be what
    // it reads after CUDA's own load of the same PTX with the same option, through the same API.
    int seen[2] = {-1, -1}, raw_seen[2] = {-1, -1};
    for (int m = 0; m < 2; ++m) {
      int mode = m == 0 ? CUDYN_JIT_CACHE_OPTION_CA : CUDYN_JIT_CACHE_OPTION_CG;
      CHECK_CUDYN(load_ptx(api, {{CUDYN_LOAD_OPTION_CACHE_MODE, mode}}, &lib));
      seen[m] = kernel_attr(lib, api, "heavy", CUDYN_KERNEL_ATTR_CACHE_MODE_CA);
      CHECK_CUDYN(cudyn_library_unload(lib, api));
      raw_seen[m] = raw_cache_mode_ca(api, mode);
      EXPECT(seen[m] == raw_seen[m], "%s: cache mode %d: CACHE_MODE_CA reads %d through cudyn, %d through raw CUDA",
             api_name(api), mode, seen[m], raw_seen[m]);
    }
    std::printf("%s: CACHE_MODE: CACHE_MODE_CA reads %d after -dlcm=ca and %d after =cg, as after CUDA's own loads "
                "(%d, %d)\n", api_name(api), seen[0], seen[1], raw_seen[0], raw_seen[1]);
    CHECK_CUDYN(load_ptx(api, {{CUDYN_LOAD_OPTION_THREADS_PER_BLOCK, 1024}}, &lib));
    int regs = kernel_attr(lib, api, "heavy", CUDYN_KERNEL_ATTR_NUM_REGS);
    EXPECT(regs <= 64, "%s: THREADS_PER_BLOCK 1024 leaves %d registers", api_name(api), regs);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    CHECK_CUDYN(load_ptx(api, {{CUDYN_LOAD_OPTION_MAX_THREADS_PER_BLOCK, 128}, {CUDYN_LOAD_OPTION_OVERRIDE_DIRECTIVE_VALUES, 1},
                               {CUDYN_LOAD_OPTION_MIN_CTA_PER_SM, 4}}, &lib));
    int most = kernel_attr(lib, api, "heavy", CUDYN_KERNEL_ATTR_MAX_THREADS_PER_BLOCK);
    EXPECT(most <= 128, "%s: MAX_THREADS_PER_BLOCK 128 gives %d", api_name(api), most);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    std::printf("%s: THREADS_PER_BLOCK 1024 -> %d registers; MAX_THREADS_PER_BLOCK 128 (+ override, MIN_CTA_PER_SM 4) -> "
                "at most %d threads a block\n", api_name(api), regs, most);
    CHECK_CUDYN(load_ptx(api, {{CUDYN_LOAD_OPTION_POSITION_INDEPENDENT_CODE, 1}}, &lib));
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    auto fat = read_file(FATBIN_PATH);
    cudyn_load_option prefer[] = {{CUDYN_LOAD_OPTION_FALLBACK_STRATEGY, CUDYN_JIT_PREFER_BINARY}};
    CHECK_CUDYN(cudyn_library_load_data_ex(fat.data(), fat.size(), api, prefer, 1, &lib, nullptr));
    CHECK_CUDYN(cudyn_library_unload(lib, api));
    std::printf("%s: POSITION_INDEPENDENT_CODE and FALLBACK_STRATEGY taken\n", api_name(api));
  }
  // The driver's own: an `a` target (sm_90a's features on this sm_90 GPU), the context's target,
  // split compilation; refused for the runtime by name.
  int major = 0, minor = 0;
  CHECK_RT(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_RT(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  cudyn_library_t lib = nullptr;
  if (major == 9 && minor == 0) {
    CHECK_CUDYN(load_ptx(CUDYN_API_DRIVER, {{CUDYN_LOAD_OPTION_TARGET, CUDYN_JIT_TARGET_COMPUTE_90A}}, &lib));
    fill_checked(get(lib, "fill", CUDYN_API_DRIVER), config_1d(256, 256, CUDYN_API_DRIVER), 11, "PTX JIT-compiled for compute_90a");
    CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  }
  CHECK_CUDYN(load_ptx(CUDYN_API_DRIVER, {{CUDYN_LOAD_OPTION_TARGET_FROM_CUCONTEXT, 1}, {CUDYN_LOAD_OPTION_SPLIT_COMPILE, 4}}, &lib));
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  EXPECT_STATUS(load_ptx(CUDYN_API_RUNTIME, {{CUDYN_LOAD_OPTION_TARGET, 90}}, &lib), CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(std::strstr(cudyn_last_error_message(), "CUDYN_LOAD_OPTION_TARGET"), "%s", cudyn_last_error_message());
  EXPECT_STATUS(load_ptx(CUDYN_API_DRIVER, {{CUDYN_LOAD_OPTION_TARGET, 91}}, &lib), CUDYN_ERROR_INVALID_ARGUMENT);
  std::printf("driver: TARGET compute_90a, TARGET_FROM_CUCONTEXT and SPLIT_COMPILE taken; TARGET refused for the runtime "
              "and 91 (no CU_TARGET) refused: %s\n", cudyn_last_error_message());
  return 0;
}

// ---- interop ----------------------------------------------------------------------------------

static int interop() {
  auto cuModuleGetFunction_ = DRIVER(cuModuleGetFunction);
  for (cudyn_api api : kApis) {
    cudyn_library_t lib = load_fatbin(api);
    cudyn_kernel_t k = get(lib, "fill", api);
    cudyn_library_t owner = nullptr;
    CHECK_CUDYN(cudyn_kernel_get_library(k, &owner));
    EXPECT(owner == lib, "%s: the kernel's library %p, loaded %p", api_name(api), (void *)owner, (void *)lib);
    for (cudyn_func_cache c : {CUDYN_FUNC_CACHE_PREFER_SHARED, CUDYN_FUNC_CACHE_PREFER_L1, CUDYN_FUNC_CACHE_PREFER_EQUAL,
                               CUDYN_FUNC_CACHE_PREFER_NONE})
      CHECK_CUDYN(cudyn_kernel_set_cache_config(k, c, 0));
    CHECK_RT(cudaFree(nullptr));
    cudyn_module_t m = nullptr;
    CHECK_CUDYN(cudyn_library_get_module(lib, &m));
    CUfunction f = nullptr;
    CHECK_CU(cuModuleGetFunction_(&f, m, "fill"));
    void *p = nullptr;
    EXPECT_STATUS(cudyn_library_get_unified_function(lib, "no_such_function", api, &p), CUDYN_ERROR_NOT_FOUND);
    EXPECT(p == nullptr, "unchanged");
    std::printf("%s: kernel_get_library is the library, set_cache_config takes all four, the module's "
                "cuModuleGetFunction finds fill, a missing unified function is NOT_FOUND\n", api_name(api));
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  // This program links the static runtime: cudyn's runtime does not know its kernels.
  cudyn_kernel_t k = nullptr;
  cudyn_status s = cudyn_kernel_of(reinterpret_cast<const void *>(program_kernel), &k);
  EXPECT(s == CUDYN_ERROR_INVALID_ARGUMENT && k == nullptr, "static runtime: %s %s", cudyn_status_string(s),
         cudyn_last_error_message());
  std::printf("cudyn_kernel_of with a static runtime: %s\n", cudyn_last_error_message());
  return 0;
}

// The same program linked with the shared runtime (surface_shared_rt): cudaGetKernel through
// cudyn finds the program's kernel, which launches through both APIs.
static int kernel_of_shared() {
  cudyn_kernel_t k = nullptr;
  CHECK_CUDYN(cudyn_kernel_of(reinterpret_cast<const void *>(program_kernel), &k));
  cudaKernel_t mine = nullptr;
  CHECK_RT(cudaGetKernel(&mine, reinterpret_cast<const void *>(program_kernel)));
  EXPECT(mine == k, "cudaGetKernel here %p, through cudyn %p", (void *)mine, (void *)k);
  for (cudyn_api api : kApis) {
    IntBuf out(32);
    void *args[] = {&out.p};
    cudyn_launch_config cfg = config_1d(32, 32, api);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 1));
    CHECK_RT(cudaDeviceSynchronize());
    for (int v : out.get()) EXPECT(v == 7, "%s: %d", api_name(api), v);
  }
  auto cxx = cudyn::kernel_from_host_function(reinterpret_cast<const void *>(program_kernel));
  EXPECT(cxx.get() == k, "C++ wrapper");
  CHECK_CUDYN(cudyn_kernel_release(k));
  std::printf("cudyn_kernel_of with the shared runtime: the program's kernel %p, launched through both APIs\n", (void *)k);
  return 0;
}

int main(int argc, char **argv) {
  const std::map<std::string, std::function<int()>> cases = {
      {"contexts", contexts},     {"launch_attributes", launch_attributes}, {"occupancy", occupancy},
      {"jit_options", jit_options}, {"interop", interop},                   {"kernel_of_shared", kernel_of_shared},
  };
  if (argc < 2 || !cases.count(argv[1])) {
    std::fprintf(stderr, "usage: %s <case>; cases:", argv[0]);
    for (auto &c : cases) std::fprintf(stderr, " %s", c.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  require_gpu();
  return cases.at(argv[1])();
}
