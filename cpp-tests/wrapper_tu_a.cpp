// Two translation units include cudyn.hpp and instantiate the same templates; linking them
// into one program catches any definition in the header that is not inline.
#include "cudyn.hpp"

#include <cstdio>

int wrapper_tu_b(void);

// The same uses as wrapper_tu_b.cpp, so that both objects define the same inline functions.
int wrapper_tu_a(void) {
  static const unsigned char junk[32] = "not an image";
  auto lib = cudyn::library::try_from_data(junk, sizeof junk, cudyn::api::driver);
  cudyn::kernel k;
  float x = 1.0f;
  auto r = k.try_launch(cudyn::launch_config::linear(100).api(cudyn::api::runtime), x, &x, std::size_t{100});
  auto g = lib->try_global<float>("g");
  auto ks = lib->try_kernels();
  cudyn::source_options o{"-std=c++17"};
  o.add_name_expression("f<int>");
  return (lib.status() == CUDYN_ERROR_INVALID_IMAGE && !r.ok() && !g.ok() && !ks.ok() &&
          lib->lowered_name("f<int>") == nullptr)
             ? 0
             : 1;
}

int main() {
  int a = wrapper_tu_a();
  int b = wrapper_tu_b();
  std::printf("tu a: %s, tu b: %s\n", a == 0 ? "ok" : "FAIL", b == 0 ? "ok" : "FAIL");
  return a | b;
}
