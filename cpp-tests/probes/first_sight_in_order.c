// One image's first-sight load, cold and warm, among the images of a corpus directory loaded in
// turn as corpus_load loads them (sorted by name; per image a raw cuLibraryLoadData and a cudyn
// load, alternating which goes first, then raw CUDA on the image cudyn built, IMAGE.handed), on
// the GPU. At the FOCUS image it also times:
//   - a first-sight cudyn load of a variant of it (VARIANT_DIR/w00.fatbin, w01.fatbin, ...: the
//     same image with bytes changed where cudyn's memo fingerprint looks, so each is a first
//     sight) right after another such load: cudyn with its code warm;
//   - raw loads of variants after raw loads, and after a cudyn load;
//   - BARE, if given (the focus image's one cubin on its own), raw, against the fatbin raw.
//   - on x86-64, a variant right after another with libcudyn's own mappings (its code, constants
//     and static data; not the heap) flushed from every cache level in between (clflush):
//     cudyn's code cold in the caches, its branches still known to the predictors. Near the cold
//     figure, a cold first sight waits on cache misses; near the warm one, on the predictors.
//   - both cold: a raw load of a variant with libcuda's mappings flushed first, and a cudyn load
//     with libcuda's and libcudyn's flushed: a first sight in a program whose other work has
//     evicted both libraries, where the rows above keep CUDA's loader warm for the raw load.
// Cold is the focus image in its place: the cudyn load before it was of the image before it in
// the directory. Medians over ROUNDS (default 9), in microseconds, with minor page faults a load.
// docs/performance.md (the fifth session of 2026-12-06) has what it found on the H100.
//   build: gcc -O2 -o first_sight_in_order first_sight_in_order.c -I$CUDA_PATH/include -I$PREFIX/include
//          -L$CUDA_PATH/lib64/stubs -L$PREFIX/lib -lcuda -lcudyn -Wl,-rpath,$PREFIX/lib
//   usage: first_sight_in_order DIR FOCUS VARIANT_DIR [BARE]
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "cudyn.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

enum { MAX_IMAGES = 4096, MAX_VARIANTS = 64, MAX_ROUNDS = 99 };

typedef struct {
  char *bytes;
  size_t size;
} Image;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static long faults(void) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt + u.ru_majflt;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static Image read_image(const char *path) {
  Image m = {NULL, 0};
  FILE *f = fopen(path, "rb");
  if (!f) return m;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  m.bytes = malloc(n > 0 ? (size_t)n : 1);
  if (m.bytes && n > 0 && fread(m.bytes, 1, (size_t)n, f) == (size_t)n) m.size = (size_t)n;
  fclose(f);
  return m;
}

// One timed load and an untimed unload; -1 where the load fails (an image with no code for
// this GPU, say). `fl` (if not NULL) gains the page faults of the load.
static double raw_load(Image m, long *fl) {
  CUlibrary l;
  long f0 = faults();
  double t0 = now_us();
  if (cuLibraryLoadData(&l, m.bytes, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS) return -1;
  double t = now_us() - t0;
  if (fl) *fl += faults() - f0;
  cuLibraryUnload(l);
  return t;
}

static double cudyn_load(Image m, long *fl) {
  cudyn_library_t l;
  long f0 = faults();
  double t0 = now_us();
  if (cudyn_library_load_data(m.bytes, m.size, CUDYN_API_DRIVER, &l) != CUDYN_SUCCESS) return -1;
  double t = now_us() - t0;
  if (fl) *fl += faults() - f0;
  cudyn_library_unload(l, CUDYN_API_DRIVER);
  return t;
}

// Evicts every line of the mappings of the libraries whose path holds `name` (as /proc/self/maps
// lists them) from every cache. Returns 0 where it cannot (not x86-64, no /proc, no such library).
static int flush_mappings(const char *name) {
#if defined(__x86_64__)
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[4096];
  int flushed = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perm[8];
    if (!strstr(line, name) || sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[0] != 'r') continue;
    for (unsigned long p = lo; p < hi; p += 64) _mm_clflush((const void *)p);
    flushed = 1;
  }
  fclose(f);
  _mm_mfence();
  return flushed;
#else
  return 0;
#endif
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char **argv) {
  if (argc < 4) return fprintf(stderr, "usage: %s DIR FOCUS VARIANT_DIR [BARE]\n", argv[0]), 2;
  CUdevice d;
  CUcontext c;
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c))
    return fprintf(stderr, "no GPU\n"), 77;
  static char *names[MAX_IMAGES];
  static Image image[MAX_IMAGES], handed[MAX_IMAGES];
  int n = 0, focus = -1;
  DIR *dir = opendir(argv[1]);
  if (!dir) return fprintf(stderr, "cannot open %s\n", argv[1]), 1;
  for (struct dirent *e; (e = readdir(dir)) && n < MAX_IMAGES;) {
    if (e->d_name[0] == '.' || strstr(e->d_name, ".handed") || strstr(e->d_name, ".globals")) continue;
    names[n++] = strdup(e->d_name);
  }
  closedir(dir);
  qsort(names, (size_t)n, sizeof *names, by_name);
  char path[4096];
  for (int i = 0; i < n; ++i) {
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    image[i] = read_image(path);
    snprintf(path, sizeof path, "%s/%s.handed", argv[1], names[i]);
    handed[i] = read_image(path);
    if (strcmp(names[i], argv[2]) == 0) focus = i;
  }
  Image variant[MAX_VARIANTS];
  int nv = 0;
  for (; nv < MAX_VARIANTS; ++nv) {
    snprintf(path, sizeof path, "%s/w%02d.fatbin", argv[3], nv);
    variant[nv] = read_image(path);
    if (!variant[nv].size) break;
  }
  Image bare = argc > 4 ? read_image(argv[4]) : (Image){NULL, 0};
  if (focus < 0 || nv < 6 || !handed[focus].size)
    return fprintf(stderr, "need FOCUS (with FOCUS.handed) in DIR and at least 6 variants\n"), 2;
  int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 9;
  if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 9;
  double cold[MAX_ROUNDS], cold_raw[MAX_ROUNDS], warm[MAX_ROUNDS], raw_after_raw[MAX_ROUNDS],
      raw_after_cudyn[MAX_ROUNDS], bare_raw[MAX_ROUNDS], fatbin_raw[MAX_ROUNDS], flushed[MAX_ROUNDS],
      both_raw[MAX_ROUNDS], both_cudyn[MAX_ROUNDS];
  int can_flush = 1;
  long cold_faults = 0, warm_faults = 0;
  int k = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < n; ++i) {
      double a, b;
      long fa = 0;
      if (r % 2 == 0) {
        a = raw_load(image[i], NULL);
        b = cudyn_load(image[i], &fa);
      } else {
        b = cudyn_load(image[i], &fa);
        a = raw_load(image[i], NULL);
      }
      if (handed[i].size) raw_load(handed[i], NULL);
      if (i != focus) continue;
      cold[r] = b, cold_raw[r] = a, cold_faults += fa;
      cudyn_load(variant[k++ % nv], NULL);
      warm[r] = cudyn_load(variant[k++ % nv], &warm_faults);
      raw_load(handed[i], NULL);
      raw_after_raw[r] = raw_load(variant[k++ % nv], NULL);
      cudyn_load(variant[k++ % nv], NULL);
      raw_after_cudyn[r] = raw_load(variant[k++ % nv], NULL);
      cudyn_load(variant[k++ % nv], NULL);
      can_flush &= flush_mappings("libcudyn");
      flushed[r] = cudyn_load(variant[k++ % nv], NULL);
      // Both cold: CUDA's own code flushed before a raw load, CUDA's and cudyn's before a cudyn
      // load. The rows above compare cudyn cold against CUDA warm (every load in the loop runs
      // CUDA's loader, cudyn's only every other one); these compare both cold.
      cudyn_load(variant[k++ % nv], NULL);
      can_flush &= flush_mappings("libcuda.so");
      both_raw[r] = raw_load(variant[k++ % nv], NULL);
      raw_load(variant[k++ % nv], NULL);
      can_flush &= flush_mappings("libcuda.so") & flush_mappings("libcudyn");
      both_cudyn[r] = cudyn_load(variant[k++ % nv], NULL);
      if (bare.size) {
        raw_load(handed[i], NULL);
        bare_raw[r] = raw_load(bare, NULL);
        raw_load(handed[i], NULL);
        fatbin_raw[r] = raw_load(handed[i], NULL);
      }
    }
  }
  printf("%s among %d images, %d rounds, driver API, median us a load\n", argv[2], n, rounds);
  double cr = median(cold_raw, rounds), cc = median(cold, rounds);
  printf("in its place (cudyn cold):  raw %6.1f  cudyn %6.1f  ratio %.2f  (cudyn: %.1f page faults a load)\n", cr, cc,
         cc / cr, (double)cold_faults / rounds);
  double w = median(warm, rounds), rr = median(raw_after_raw, rounds), rc = median(raw_after_cudyn, rounds);
  printf("variants (cudyn warm):      raw %6.1f  cudyn %6.1f  ratio %.2f  (raw after a cudyn load: %.1f; %.1f faults)\n",
         rr, w, w / rr, rc, (double)warm_faults / rounds);
  if (can_flush) {
    printf("variants, libcudyn flushed from the caches after a warm load: cudyn %6.1f\n", median(flushed, rounds));
    double br = median(both_raw, rounds), bc = median(both_cudyn, rounds);
    printf("variants, both cold (libcuda flushed before raw, libcuda and libcudyn before cudyn): raw %6.1f  cudyn %6.1f  ratio %.2f\n",
           br, bc, bc / br);
  }
  if (bare.size)
    printf("its cubin bare, raw %.1f; the fatbin, raw %.1f (each after a raw load of the fatbin)\n",
           median(bare_raw, rounds), median(fatbin_raw, rounds));
  return 0;
}
