/* libcommon: launches kernels it knows nothing about. Plain C, linked with cudyn only: no CUDA
 * runtime, no libcuda, no CUDA header. Any kernel handle works, whoever loaded it: a
 * cudaKernel_t from another library's runtime instance is a cudyn_kernel_t. */
#ifndef COMMON_H
#define COMMON_H
#include <stddef.h>
#include "cudyn.h"
#ifdef __cplusplus
extern "C" {
#endif
#define COMMON_API __attribute__((visibility("default")))

/* Launch `kernel` on the legacy default stream through the CUDA runtime (cudyn's own runtime
 * instance) or through the driver. `args` as CUDA's kernelParams; `arg_sizes` (may be NULL)
 * are checked against the kernel's parameters before anything is launched. On failure the
 * status is returned and cudyn_last_error_message() says why. */
COMMON_API cudyn_status common_launch_runtime(cudyn_kernel_t kernel, cudyn_dim3 grid, cudyn_dim3 block,
                                              void **args, const size_t *arg_sizes, size_t nargs);
COMMON_API cudyn_status common_launch_driver(cudyn_kernel_t kernel, cudyn_dim3 grid, cudyn_dim3 block,
                                             void **args, const size_t *arg_sizes, size_t nargs);
/* Either of the above, chosen by `api`. */
COMMON_API cudyn_status common_launch(cudyn_kernel_t kernel, cudyn_api api, cudyn_dim3 grid, cudyn_dim3 block,
                                      void **args, const size_t *arg_sizes, size_t nargs);

/* "name (N parameters)" for the kernel, into `buf` (always terminated); the status of the
 * query. */
COMMON_API cudyn_status common_describe(cudyn_kernel_t kernel, char *buf, size_t size);
#ifdef __cplusplus
}
#endif
#endif
