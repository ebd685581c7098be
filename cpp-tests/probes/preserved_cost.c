// What CU_LIBRARY_BINARY_IS_PRESERVED (the one load option cudyn passes with every image it
// built, so that CUDA reads cudyn's checked copy in place instead of copying it) costs CUDA,
// beside a plain raw load and a first-sight load through cudyn. The images are loaded in turn,
// round after round (more than 32 keep every cudyn load a first sight: its memo recognises 32);
// the three variants rotate their order every round, each load timed alone (unload untimed).
// Prints, per image, the median of each variant in microseconds, and the sums.
//   build: gcc -O2 -o preserved_cost preserved_cost.c -I$CUDA_PATH/include -I$PREFIX/include
//          -L$CUDA_PATH/lib64/stubs -L$PREFIX/lib -lcuda -lcudyn -Wl,-rpath,$PREFIX/lib
//   usage: preserved_cost ROUNDS IMAGE...
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cudyn.h"

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(n > 0 ? n : 1);
  if (b && fread(b, 1, n, f) != (size_t)n) b = NULL;
  fclose(f);
  *size = (size_t)n;
  return b;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One load of variant `k` of image `b`: 0 raw, 1 raw with BINARY_IS_PRESERVED, 2 cudyn (driver).
static double one(int k, const char *b, size_t size) {
  double t0 = now_us(), t1;
  if (k == 2) {
    cudyn_library_t l;
    if (cudyn_library_load_data(b, size, CUDYN_API_DRIVER, &l) != CUDYN_SUCCESS) return -1;
    t1 = now_us();
    cudyn_library_unload(l, CUDYN_API_DRIVER);
    return t1 - t0;
  }
  CUlibrary l;
  CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
  void *val = (void *)(size_t)1;
  if (cuLibraryLoadData(&l, b, NULL, NULL, 0, k == 1 ? &opt : NULL, k == 1 ? &val : NULL, k == 1 ? 1 : 0)) return -1;
  t1 = now_us();
  cuLibraryUnload(l);
  return t1 - t0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ROUNDS IMAGE...\n", argv[0]);
    return 2;
  }
  int rounds = atoi(argv[1]), n = argc - 2;
  if (rounds < 1) rounds = 1;
  char **img = calloc(n, sizeof *img);
  size_t *size = calloc(n, sizeof *size);
  double *t = calloc((size_t)n * 3 * rounds, sizeof *t);
  CUdevice d;
  CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) {
    fprintf(stderr, "no GPU\n");
    return 77;
  }
  for (int i = 0; i < n; ++i)
    if (!(img[i] = read_all(argv[i + 2], &size[i]))) return fprintf(stderr, "cannot read %s\n", argv[i + 2]), 1;
  for (int r = 0; r < rounds; ++r)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j) {
        int k = (j + r) % 3;
        t[((size_t)i * 3 + k) * rounds + r] = one(k, img[i], size[i]);
      }
  double sum[3] = {0, 0, 0};
  printf("%-72s %9s %9s %9s %9s %9s\n", "image (medians, us)", "raw", "preserved", "cudyn", "pres/raw", "cudyn/raw");
  for (int i = 0; i < n; ++i) {
    double m[3];
    for (int k = 0; k < 3; ++k) sum[k] += m[k] = median(&t[((size_t)i * 3 + k) * rounds], rounds);
    const char *name = strrchr(argv[i + 2], '/');
    printf("%-72s %9.1f %9.1f %9.1f %9.3f %9.3f\n", name ? name + 1 : argv[i + 2], m[0], m[1], m[2], m[1] / m[0],
           m[2] / m[0]);
  }
  printf("%-72s %9.1f %9.1f %9.1f %9.3f %9.3f\n", "sum", sum[0], sum[1], sum[2], sum[1] / sum[0], sum[2] / sum[0]);
  return 0;
}
