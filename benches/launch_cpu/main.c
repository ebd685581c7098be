/* Counts host instructions per launch: mode 0 calls the stand-in launch directly, mode 1
 * cudyn_launch (driver), mode 2 cudyn_launch_checked. Run by benches/launch_cpu/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>
#include "cudyn.h"
typedef int (*launch_fn)(const void *, void *, void **, void **);
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000000;
  int mode = argc > 2 ? atoi(argv[2]) : 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  launch_fn raw = (launch_fn)dlsym(h, "s_launch");
  cudyn_kernel_t k = (cudyn_kernel_t)0x5000;
  long a = 1, b = 2;
  void *args[] = {&a, &b};
  size_t sizes[] = {8, 8};
  cudyn_launch_config cfg = {0};
  cfg.grid.x = cfg.grid.y = cfg.grid.z = 1; cfg.block.x = 32; cfg.block.y = cfg.block.z = 1;
  cfg.api = CUDYN_API_DRIVER;
  if (cudyn_launch(k, &cfg, args, 2) != 0) { printf("%s\n", cudyn_last_error_message()); return 1; }
  char c[56] = {0};
  for (int i = 0; i < n; i++) {
    if (mode == 0) raw(c, k, args, 0);
    else if (mode == 1) cudyn_launch(k, &cfg, args, 2);
    else cudyn_launch_checked(k, &cfg, args, sizes, 2);
  }
  return 0;
}
