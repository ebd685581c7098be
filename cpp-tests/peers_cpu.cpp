// The C++ wrapper's C++-name and preload calls without a GPU: demangling (which needs none),
// and the refusals of an empty library, with and without exceptions.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "cudyn.hpp"

static int failures = 0;
#define EXPECT(cond)                                                    \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

int main() {
  auto d = cudyn::try_demangle("_Z4axpyIfEvPT_S0_i");
  EXPECT(d.ok() && *d == "axpy<float>(float*, float, int)");
  auto s = cudyn::try_demangle("__nv_static_25__d6e6ae20_4_k_cu_ba88ac67__Z6stat_kPi");
  EXPECT(s.ok() && *s == "stat_k(int*)");
  auto c = cudyn::try_demangle("plain");
  EXPECT(c.status() == CUDYN_ERROR_NOT_FOUND && c.message().find("plain") != std::string::npos);
  EXPECT(cudyn::try_demangle(nullptr).status() == CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(std::strcmp(cudyn_status_string(CUDYN_ERROR_AMBIGUOUS_NAME),
                     "CUDYN_ERROR_AMBIGUOUS_NAME: the name fits more than one kernel") == 0);

  cudyn::library empty;
  EXPECT(empty.try_kernel("axpy<float>").status() == CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(empty.try_preload({0}).status() == CUDYN_ERROR_INVALID_ARGUMENT);
  EXPECT(empty.try_preload({}).status() == CUDYN_ERROR_INVALID_ARGUMENT);
  cudyn_kernel_t k = nullptr;
  EXPECT(cudyn_library_find_kernel(nullptr, "x", CUDYN_API_DRIVER, &k) == CUDYN_ERROR_INVALID_ARGUMENT && !k);
  EXPECT(cudyn_library_preload(nullptr, nullptr, 0, nullptr) == CUDYN_ERROR_INVALID_ARGUMENT);
#if CUDYN_HPP_EXCEPTIONS
  bool threw = false;
  try {
    (void)cudyn::demangle("plain");
  } catch (const cudyn::error& e) {
    threw = e.status() == CUDYN_ERROR_NOT_FOUND;
  }
  EXPECT(threw);
  EXPECT(cudyn::demangle("_Z5scalePdd") == "scale(double*, double)");
#endif
  if (failures) return 1;
  std::printf("PASS\n");
  return 0;
}
