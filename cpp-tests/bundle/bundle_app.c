/* A program whose kernel source cudyn_add_kernel_bundle() compiled at build time: run from a
 * copy in another folder, with an empty cache and its bundle beside it, its compile is a hit
 * that loads no NVRTC ("bundle_app: hit"); without the bundle it compiles ("bundle_app:
 * compiled"). Usage: bundle_app <kernel.cu> <include folder> hit|compiled */
#include <cudyn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "bundle_app: %s: %s\n", what, cudyn_last_error_message());
  return 1;
}

/* Whether libnvrtc is mapped into this process. */
static int nvrtc_loaded(void) {
  char line[4096];
  int found = 0;
  FILE *m = fopen("/proc/self/maps", "r");
  if (!m) return -1;
  while (fgets(line, sizeof line, m))
    if (strstr(line, "libnvrtc")) found = 1;
  fclose(m);
  return found;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: bundle_app <kernel.cu> <include folder> hit|compiled\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return fail(argv[1]);
  static char src[1 << 16];
  size_t n = fread(src, 1, sizeof src - 1, f);
  fclose(f);
  src[n] = 0;
  char inc[4096];
  snprintf(inc, sizeof inc, "-I%s", argv[2]);
  /* The options the bundle was built with, the include folder aside (here another one). */
  const char *opts[] = {inc, "-std=c++17"};
  cudyn_buffer code = {0}, log = {0};
  if (cudyn_compile(src, "kernel.cu", opts, 2, CUDYN_CODE_CUBIN, &code, &log) != CUDYN_SUCCESS)
    return fail("cudyn_compile");
  cudyn_cache_info info;
  if (cudyn_cache_stats(&info) != CUDYN_SUCCESS) return fail("cudyn_cache_stats");
  int loaded = nvrtc_loaded();
  int hit = info.hits == 1 && info.misses == 0 && loaded == 0;
  int want_hit = strcmp(argv[3], "hit") == 0;
  printf("bundle_app: %s (hits %llu, misses %llu, NVRTC %s, %zu bytes of cubin)\n", hit ? "hit" : "compiled",
         (unsigned long long)info.hits, (unsigned long long)info.misses, loaded ? "loaded" : "not loaded", code.size);
  /* The C surface of bundles: a file that is not one is refused with the reason, NULL too. */
  if (cudyn_cache_import(argv[1], NULL) != CUDYN_ERROR_INVALID_IMAGE) return fail("importing a non-bundle");
  if (!strstr(cudyn_last_error_message(), "not a usable cudyn bundle")) return fail("the message");
  if (cudyn_cache_add_layer(NULL) != CUDYN_ERROR_INVALID_ARGUMENT) return fail("a NULL layer");
  cudyn_buffer_free(&code);
  cudyn_buffer_free(&log);
  return hit == want_hit ? 0 : 1;
}
