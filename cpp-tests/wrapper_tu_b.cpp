// The second translation unit of wrapper_two_tus (see wrapper_tu_a.cpp).
#include "cudyn.hpp"

int wrapper_tu_b(void);

int wrapper_tu_b(void) {
  static const unsigned char junk[32] = "not an image either";
  auto lib = cudyn::library::try_from_data(junk, sizeof junk, cudyn::api::driver);
  cudyn::kernel k;
  float x = 2.0f;
  auto r = k.try_launch(cudyn::launch_config::linear(100).api(cudyn::api::driver), x, &x, std::size_t{100});
  auto g = lib->try_global<float>("g");
  auto ks = lib->try_kernels();
  cudyn::source_options o{"-std=c++17"};
  o.add_name_expression("f<int>");
#if CUDYN_HPP_EXCEPTIONS
  try {
    (void)k.param_count();
    return 1;
  } catch (const cudyn::error& e) {
    if (e.status() != CUDYN_ERROR_INVALID_ARGUMENT) return 1;
  }
#endif
  return (lib.status() == CUDYN_ERROR_INVALID_IMAGE && !r.ok() && !g.ok() && !ks.ok()) ? 0 : 1;
}
