// Load options on a real GPU: JIT options that change the result observably, the JIT log of
// a PTX that ptxas refuses, managed variables, globals of a chosen device. One case per ctest
// test (argv[1]).
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include "test_util.hpp"
#include "cudyn.hpp"

static const cudyn_api kApis[] = {CUDYN_API_RUNTIME, CUDYN_API_DRIVER};

// A PTX whose line 12 names a register that was never declared.
static const char kBadPtx[] =
    "//\n"
    "// deliberately broken\n"
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry broken(.param .u64 p)\n"
    "{\n"
    "  .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  st.global.u32 [%rd2], %r_undeclared;\n"
    "  ret;\n"
    "}\n";

static int ptx_error_log() {
  for (cudyn_api api : kApis) {
    cudyn_library_t lib = nullptr;
    cudyn_buffer log = {nullptr, 0};
    cudyn_status s = cudyn_library_load_data_ex(kBadPtx, sizeof kBadPtx, api, nullptr, 0, &lib, &log);
    EXPECT(s == CUDYN_ERROR_INVALID_IMAGE || s == CUDYN_ERROR_CUDA, "%s: %s", cudyn_status_string(s),
           cudyn_last_error_message());
    EXPECT(lib == nullptr, "nothing loaded");
    std::string msg = cudyn_last_error_message();
    EXPECT(msg.find("line 12") != std::string::npos, "message names the line: %s", msg.c_str());
    EXPECT(log.data && std::string((char *)log.data).find("line 12") != std::string::npos, "log: %s",
           log.data ? (char *)log.data : "(none)");
    std::printf("%s: %s\n  log: %s\n", api_name(api), msg.c_str(), (char *)log.data);
    cudyn_buffer_free(&log);
    // Without _ex: the same first line in the message.
    s = cudyn_library_load_data(kBadPtx, sizeof kBadPtx, api, &lib);
    EXPECT(s != CUDYN_SUCCESS && std::strstr(cudyn_last_error_message(), "line 12"), "%s", cudyn_last_error_message());
  }
  return 0;
}

static int regs_of(cudyn_api api, const cudyn_load_option *opts, size_t n, std::string *info = nullptr) {
  auto ptx = read_file(PTX_PATH);
  cudyn_library_t lib = nullptr;
  cudyn_buffer log = {nullptr, 0};
  CHECK_CUDYN(cudyn_library_load_data_ex(ptx.data(), ptx.size(), api, opts, n, &lib, &log));
  if (info) *info = log.data ? (char *)log.data : "";
  cudyn_buffer_free(&log);
  cudyn_kernel_t k = nullptr;
  CHECK_CUDYN(cudyn_library_get_kernel(lib, "many_registers", api, &k));
  int regs = 0;
  CHECK_CUDYN(cudyn_kernel_get_attribute(k, CUDYN_KERNEL_ATTR_NUM_REGS, 0, &regs));
  // And it still computes: one launch, checked against a host copy of the arithmetic.
  std::vector<float> in(256);
  for (int i = 0; i < 256; ++i) in[i] = 0.001f * (i % 7);
  DevBuf din(in), dout(256);
  int nn = 256;
  void *args[] = {&din.p, &dout.p, &nn};
  cudyn_launch_config cfg = config_1d(256, 128, api);
  CHECK_CUDYN(cudyn_launch(k, &cfg, args, 3));
  CHECK_RT(cudaDeviceSynchronize());
  auto out = dout.get();
  for (int t = 0; t < 256; ++t) {
    float acc[48];
    for (int j = 0; j < 48; ++j) acc[j] = in[((t % 128) + j * 97) % 256];
    for (int r = 0; r < 8; ++r)
      for (int j = 0; j < 48; ++j) acc[j] = acc[j] * 0.5f + acc[(j + r + 1) % 48] * 0.25f + 1.0f;
    float s = 0;
    for (int j = 0; j < 48; ++j) s += acc[j];
    EXPECT(std::fabs(out[t] - s) <= 1e-3f * std::fabs(s), "out[%d] = %g, want %g", t, out[t], s);
  }
  CHECK_CUDYN(cudyn_library_unload(lib, api));
  return regs;
}

static int jit_options() {
  for (cudyn_api api : kApis) {
    int plain = regs_of(api, nullptr, 0);
    cudyn_load_option cap[] = {{CUDYN_LOAD_OPTION_MAX_REGISTERS, 32}};
    int capped = regs_of(api, cap, 1);
    std::printf("%s: many_registers uses %d registers; with MAX_REGISTERS=32, %d\n", api_name(api), plain, capped);
    EXPECT(plain > 32, "the kernel needs more than 32 registers unconstrained (%d)", plain);
    EXPECT(capped <= 32, "the cap holds (%d)", capped);
    std::string info;
    cudyn_load_option verbose[] = {{CUDYN_LOAD_OPTION_LOG_VERBOSE, 1}, {CUDYN_LOAD_OPTION_GENERATE_LINE_INFO, 1},
                                   {CUDYN_LOAD_OPTION_OPTIMIZATION_LEVEL, 3}};
    regs_of(api, verbose, 3, &info);
    std::printf("%s: verbose info log: %s\n", api_name(api), info.c_str());
    EXPECT(info.find("registers") != std::string::npos, "the verbose JIT log reports registers: '%s'", info.c_str());
  }
  // Driver-only options: taken by the driver, refused for the runtime before anything loads.
  cudyn_load_option target[] = {{CUDYN_LOAD_OPTION_TARGET, 90}, {CUDYN_LOAD_OPTION_SPLIT_COMPILE, 2}};
  regs_of(CUDYN_API_DRIVER, target, 2);
  auto ptx = read_file(PTX_PATH);
  cudyn_library_t lib = nullptr;
  EXPECT_STATUS(cudyn_library_load_data_ex(ptx.data(), ptx.size(), CUDYN_API_RUNTIME, target, 1, &lib, nullptr),
                CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(lib == nullptr, "unchanged");
  cudyn_load_option preserved[] = {{CUDYN_LOAD_OPTION_BINARY_IS_PRESERVED, 1}};
  for (cudyn_api api : kApis) {
    std::vector<char> copy = read_file(FATBIN_PATH);
    CHECK_CUDYN(cudyn_library_load_data_ex(copy.data(), copy.size(), api, preserved, 1, &lib, nullptr));
    std::fill(copy.begin(), copy.end(), 0);  // CUDA kept its own copy
    cudyn_kernel_t k = nullptr;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "bump_managed", api, &k));
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  return 0;
}

static int managed_variable() {
  for (cudyn_api api : kApis) {
    cudyn_library_t lib = nullptr;
    CHECK_CUDYN(cudyn_library_load_file(FATBIN_PATH, api, &lib));
    int *counter = nullptr;
    size_t bytes = 0;
    CHECK_CUDYN(cudyn_library_get_managed(lib, "managed_counter", api, (void **)&counter, &bytes));
    EXPECT(counter && bytes == sizeof(int), "%p %zu", (void *)counter, bytes);
    *counter = 5;  // the host writes it
    cudyn_kernel_t k = nullptr;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "bump_managed", api, &k));
    int by = 7;
    void *args[] = {&by};
    cudyn_launch_config cfg = config_1d(64, 64, api);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 1));
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(*counter == 5 + 64 * 7, "the kernel read the host's value and the host reads the kernel's: %d", *counter);
    void *f = nullptr;
    // The runtime answers cudaErrorInvalidValue for a missing name, the driver NOT_FOUND.
    EXPECT(cudyn_library_get_unified_function(lib, "no_such_function", api, &f) != CUDYN_SUCCESS, "missing name");
    EXPECT(f == nullptr, "unchanged");
    void *p = nullptr;
    EXPECT(cudyn_library_get_managed(lib, "no_such_variable", api, &p, nullptr) != CUDYN_SUCCESS && !p, "missing");
    std::printf("%s: __managed__ managed_counter: host wrote 5, 64 threads added 7: host reads %d\n", api_name(api), *counter);
    CHECK_CUDYN(cudyn_library_unload(lib, api));
  }
  // The same through the C++ wrapper, with a JIT log from a PTX load with options.
  auto lib = cudyn::library::from_file(FATBIN_PATH, cudyn::api::driver);
  auto m = lib.managed<int>("managed_counter");
  EXPECT(m.count() == 1, "%zu", m.count());
  *m.ptr = 1;
  lib.kernel("bump_managed").launch(cudyn::launch_config::linear(256).api(cudyn::api::runtime), 2);
  CHECK_RT(cudaDeviceSynchronize());
  EXPECT(*m.ptr == 1 + 256 * 2, "%d", *m.ptr);
  auto ptx = read_file(PTX_PATH);
  std::string jit;
  auto lib2 = cudyn::library::from_data(ptx.data(), ptx.size(), cudyn::api::driver, {{CUDYN_LOAD_OPTION_LOG_VERBOSE, 1}}, &jit);
  EXPECT(jit.find("registers") != std::string::npos, "C++ JIT log: %s", jit.c_str());
  auto bad = cudyn::library::try_from_data(kBadPtx, sizeof kBadPtx, cudyn::api::runtime, {}, nullptr);
  EXPECT(!bad.ok() && bad.log().find("line 12") != std::string::npos, "C++ error log: %s", bad.log().c_str());
  std::printf("C++: managed<int> and from_data with options and JIT log: ok\n");
  return 0;
}

// A global of device 1 and of device 0, each set through its own address, read by a kernel on
// that device. Needs two GPUs.
static int global_per_device() {
  require_gpu(2);
  cudyn_library_t lib = nullptr;
  CHECK_CUDYN(cudyn_library_load_file(FATBIN_PATH, CUDYN_API_DRIVER, &lib));
  for (int dev : {1, 0}) {
    void *g = nullptr;
    size_t bytes = 0;
    CHECK_CUDYN(cudyn_library_get_global_on_device(lib, "device_value", dev, &g, &bytes));
    EXPECT(bytes == sizeof(float), "%zu", bytes);
    CHECK_RT(cudaSetDevice(dev));
    float v = 10.0f + dev;
    CHECK_RT(cudaMemcpy(g, &v, sizeof v, cudaMemcpyHostToDevice));
    cudyn_kernel_t k = nullptr;
    CHECK_CUDYN(cudyn_library_get_kernel(lib, "read_device_value", CUDYN_API_DRIVER, &k));
    DevBuf out(1);
    void *args[] = {&out.p};
    cudyn_launch_config cfg = config_1d(1, 1, CUDYN_API_RUNTIME);
    CHECK_CUDYN(cudyn_launch(k, &cfg, args, 1));
    CHECK_RT(cudaDeviceSynchronize());
    EXPECT(out.get()[0] == v, "device %d read %g", dev, out.get()[0]);
    std::printf("device %d: global at %p holds %g, read back by a kernel there\n", dev, g, v);
  }
  CHECK_RT(cudaSetDevice(0));
  void *g = nullptr;
  EXPECT_STATUS(cudyn_library_get_global_on_device(lib, "device_value", 99, &g, nullptr), CUDYN_ERROR_NO_DEVICE);
  CHECK_CUDYN(cudyn_library_unload(lib, CUDYN_API_DRIVER));
  return 0;
}

int main(int argc, char **argv) {
  const std::map<std::string, std::function<int()>> cases = {
      {"ptx_error_log", ptx_error_log},
      {"jit_options", jit_options},
      {"managed_variable", managed_variable},
      {"global_per_device", global_per_device},
  };
  if (argc < 2 || !cases.count(argv[1])) {
    std::fprintf(stderr, "usage: %s <case>\n", argv[0]);
    return 2;
  }
  // The driver's JIT cache would answer a repeated PTX load without compiling, and so without
  // a log: these tests need the JIT to run.
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  require_gpu();
  return cases.at(argv[1])();
}
