/* Prints which CUDA components cudyn found, their versions and where they came from, or
 * the clear reason one is missing. Exits 0 either way: a machine without a GPU is a fine
 * place to run it. */
#include <stdio.h>
#include "cudyn.h"

int main(void) {
  static const char *names[] = {"driver (libcuda)", "runtime (libcudart)", "NVRTC", "nvJitLink"};
  cudyn_version_info v;
  if (cudyn_versions(&v) != CUDYN_SUCCESS) {
    fprintf(stderr, "cudyn_versions failed: %s\n", cudyn_last_error_message());
    return 1;
  }
  int nums[] = {v.driver, v.runtime, v.nvrtc, v.nvjitlink};
  printf("%s\n", cudyn_version_string());
  for (int c = 0; c < 4; ++c) {
    cudyn_status s = cudyn_component_status((cudyn_component)c);
    if (s == CUDYN_SUCCESS) {
      const char *path = cudyn_component_path((cudyn_component)c);
      printf("  %-20s %d  (%s)\n", names[c], nums[c], path ? path : "?");
    } else if (nums[c] != 0) {
      printf("  %-20s %d  but unusable: %s\n", names[c], nums[c], cudyn_last_error_message());
    } else {
      printf("  %-20s absent: %s\n", names[c], cudyn_last_error_message());
    }
  }
  /* The compile cache: on, or why not (turned off, a bad setting, a folder it cannot use). */
  cudyn_cache_info cs;
  if (cudyn_cache_status() == CUDYN_SUCCESS && cudyn_cache_stats(&cs) == CUDYN_SUCCESS) {
    printf("  %-20s on: %s (%llu entries, %llu bytes)\n", "compile cache", cudyn_cache_dir(),
           (unsigned long long)cs.entries, (unsigned long long)cs.bytes);
  } else {
    printf("  %-20s off: %s\n", "compile cache", cudyn_last_error_message());
  }
  return 0;
}
