/* First-sight loads through cudyn against the stand-in libcuda of benches/launch_cpu (no GPU):
 * the images given are loaded in turn, round after round (more than 32 keep every load a first
 * sight: cudyn's memo recognises 32), each load timed alone, unload untimed. Between loads,
 * untimed, EVICT_MIB MiB of memory are written (default 0): with a few tens of MiB cudyn's code
 * and data are cold when it starts, as after a real driver's load of other images. CHURN=N
 * (default 0) also allocates N blocks of the C heap between loads, of sizes like a driver's, and
 * frees half of them before the load and half after: the frees a driver's load leaves in the
 * heap, which glibc sorts at the next request it cannot serve from its per-thread cache. Under
 * callgrind (run.sh) only the loads are collected, so its cache simulation counts the lines a
 * cold load touches. Prints the median and 90th percentile. Not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cudyn.h"
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int n = argc - 1;
  if (n < 1) {
    fprintf(stderr, "usage: %s IMAGE...  (ROUNDS, EVICT_MIB in the environment)\n", argv[0]);
    return 2;
  }
  char **img = calloc(n, sizeof *img);
  size_t *size = calloc(n, sizeof *size);
  for (int i = 0; i < n; ++i) {
    FILE *f = fopen(argv[i + 1], "rb");
    if (!f) return fprintf(stderr, "cannot open %s\n", argv[i + 1]), 1;
    fseek(f, 0, SEEK_END);
    size[i] = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    img[i] = malloc(size[i] ? size[i] : 1);
    if (fread(img[i], 1, size[i], f) != size[i]) return fprintf(stderr, "cannot read %s\n", argv[i + 1]), 1;
    fclose(f);
  }
  int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 15;
  size_t evict = (size_t)(getenv("EVICT_MIB") ? atoi(getenv("EVICT_MIB")) : 0) << 20;
  char *junk = evict ? malloc(evict) : NULL;
  if (junk) memset(junk, 1, evict);
  int churn = getenv("CHURN") ? atoi(getenv("CHURN")) : 0;
  void **blocks = calloc((size_t)churn + 1, sizeof *blocks);
  unsigned seed = 1;
  double *t = calloc((size_t)rounds * n, sizeof *t);
  int k = 0;
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up, untimed
    for (int i = 0; i < n; ++i) {
      for (int c = 0; c < churn; ++c) {
        seed = seed * 1103515245u + 12345u;  // mostly small blocks, one in four up to 20 KB
        blocks[c] = malloc(16 + (seed >> 8) % ((seed & 3) ? 512 : 20000));
      }
      for (int c = 0; c < churn; c += 2) free(blocks[c]);
      for (size_t j = 0; j < evict; j += 64) junk[j]++;
      cudyn_library_t l;
      if (r) CALLGRIND_TOGGLE_COLLECT;
      double t0 = now_us();
      cudyn_status st = cudyn_library_load_data(img[i], size[i], CUDYN_API_DRIVER, &l);
      double t1 = now_us();
      if (r) CALLGRIND_TOGGLE_COLLECT;
      if (st != CUDYN_SUCCESS) return fprintf(stderr, "%s: %s\n", argv[i + 1], cudyn_last_error_message()), 1;
      cudyn_library_unload(l, CUDYN_API_DRIVER);
      for (int c = 1; c < churn; c += 2) free(blocks[c]);
      if (r) t[k++] = t1 - t0;
    }
  }
  qsort(t, k, sizeof *t, cmp);
  printf("%d images in turn, %d rounds, %zu MiB written and %d heap blocks churned between loads: median %.2f us, p90 "
         "%.2f us a load\n", n, rounds, evict >> 20, churn, t[k / 2], t[k * 9 / 10]);
  return 0;
}
