// A first-sight load through cudyn beside the raw loads it is made of, on the GPU: for images
// loaded in turn (more than 32 keep every cudyn load a first sight), the median of each
// variant per image, averaged over the images, in microseconds:
//   raw cuLibraryLoadData of the caller's buffer; the same with CU_LIBRARY_BINARY_IS_PRESERVED;
//   a fresh copy made and loaded with that option (timed: what cudyn's own copy costs CUDA);
//   the same after reading the image once (a stand-in for cudyn's check touching it); cudyn.
// The variants rotate their order every round; unloads are untimed. Comparing "cudyn" with the
// timed copy gives cudyn's own work on the GPU host; benches/load_cold gives the same without
// a GPU, warm and cold.
//   build: gcc -O2 -o first_sight_parts first_sight_parts.c -I$CUDA_PATH/include -I$PREFIX/include
//          -L$CUDA_PATH/lib64/stubs -L$PREFIX/lib -lcuda -lcudyn -Wl,-rpath,$PREFIX/lib
//   usage: first_sight_parts IMAGE...   (ROUNDS in the environment, default 9)
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

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { V = 5 };
static const char *names[V] = {"raw", "raw + BINARY_IS_PRESERVED", "fresh copy + BINARY_IS_PRESERVED (timed)",
                               "read once, fresh copy + BINARY_IS_PRESERVED", "cudyn"};

int main(int argc, char **argv) {
  int n = argc - 1;
  if (n < 1) return fprintf(stderr, "usage: %s IMAGE...\n", argv[0]), 2;
  CUdevice d;
  CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c))
    return fprintf(stderr, "no GPU\n"), 77;
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
  int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 9;
  if (rounds < 1) rounds = 1;
  double *t = calloc((size_t)V * n * rounds, sizeof *t);
  CUlibraryOption opt = CU_LIBRARY_BINARY_IS_PRESERVED;
  void *one = (void *)(size_t)1;
  volatile unsigned sink = 0;
  for (int r = 0; r < rounds; ++r)
    for (int j = 0; j < V; ++j) {
      int v = (j + r) % V;
      for (int i = 0; i < n; ++i) {
        CUlibrary l = NULL;
        cudyn_library_t cl = NULL;
        char *copy = NULL;
        CUresult rr = CUDA_SUCCESS;
        double t0 = now_us();
        if (v == 0) {
          rr = cuLibraryLoadData(&l, img[i], NULL, NULL, 0, NULL, NULL, 0);
        } else if (v == 1) {
          rr = cuLibraryLoadData(&l, img[i], NULL, NULL, 0, &opt, &one, 1);
        } else if (v == 2 || v == 3) {
          if (v == 3) {
            unsigned s = 0;
            for (size_t k = 0; k < size[i]; k += 64) s += (unsigned char)img[i][k];
            sink += s;
          }
          copy = malloc(size[i]);
          memcpy(copy, img[i], size[i]);
          rr = cuLibraryLoadData(&l, copy, NULL, NULL, 0, &opt, &one, 1);
        } else if (cudyn_library_load_data(img[i], size[i], CUDYN_API_DRIVER, &cl) != CUDYN_SUCCESS) {
          return fprintf(stderr, "%s: %s\n", argv[i + 1], cudyn_last_error_message()), 1;
        }
        double t1 = now_us();
        if (rr != CUDA_SUCCESS) return fprintf(stderr, "%s: raw load failed (%d)\n", argv[i + 1], (int)rr), 1;
        t[((size_t)v * n + i) * rounds + r] = t1 - t0;
        if (v == 4) cudyn_library_unload(cl, CUDYN_API_DRIVER);
        else cuLibraryUnload(l);
        free(copy);
      }
    }
  double raw = 0;
  printf("%d images in turn, %d rounds; mean over images of each image's median (us)\n", n, rounds);
  for (int v = 0; v < V; ++v) {
    double s = 0;
    for (int i = 0; i < n; ++i) {
      double *m = &t[((size_t)v * n + i) * rounds];
      qsort(m, rounds, sizeof *m, cmp);
      s += m[rounds / 2];
    }
    if (v == 0) raw = s;
    printf("%-48s %8.2f  %6.3f\n", names[v], s / n, s / raw);
  }
  return 0;
}
