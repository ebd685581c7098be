/* libcommon: see common.h. Everything goes through cudyn, which opens CUDA at run time. */
#include "common.h"

#include <stdio.h>

cudyn_status common_launch(cudyn_kernel_t kernel, cudyn_api api, cudyn_dim3 grid, cudyn_dim3 block,
                           void **args, const size_t *arg_sizes, size_t nargs) {
  cudyn_launch_config cfg = {0};
  cfg.grid = grid;
  cfg.block = block;
  cfg.api = api;
  if (arg_sizes) return cudyn_launch_checked(kernel, &cfg, args, arg_sizes, nargs);
  return cudyn_launch(kernel, &cfg, args, nargs);
}

cudyn_status common_launch_runtime(cudyn_kernel_t kernel, cudyn_dim3 grid, cudyn_dim3 block,
                                   void **args, const size_t *arg_sizes, size_t nargs) {
  return common_launch(kernel, CUDYN_API_RUNTIME, grid, block, args, arg_sizes, nargs);
}

cudyn_status common_launch_driver(cudyn_kernel_t kernel, cudyn_dim3 grid, cudyn_dim3 block,
                                  void **args, const size_t *arg_sizes, size_t nargs) {
  return common_launch(kernel, CUDYN_API_DRIVER, grid, block, args, arg_sizes, nargs);
}

cudyn_status common_describe(cudyn_kernel_t kernel, char *buf, size_t size) {
  const char *name = NULL;
  size_t count = 0;
  if (!buf || size == 0) return CUDYN_ERROR_INVALID_ARGUMENT;
  buf[0] = '\0';
  cudyn_status s = cudyn_kernel_name(kernel, &name);
  if (s == CUDYN_SUCCESS) s = cudyn_kernel_param_count(kernel, &count);
  if (s == CUDYN_SUCCESS) snprintf(buf, size, "%s (%zu parameters)", name, count);
  return s;
}
