// What it costs to learn that a kernel has no parameter past the last, the question a launch of
// a foreign kernel (one cudyn cannot remember: its library may go away unseen) must ask CUDA
// each time, since CUDA 13.0 has no call that gives a kernel's parameter count. Raw driver only,
// with device 0's primary context current: each variant is called N times in a row and its
// mean printed in microseconds, with the CUresult it returned.
//   build: gcc -O2 -o param_count_cost param_count_cost.c -I$CUDA_PATH/include -L$CUDA_PATH/lib64/stubs -lcuda
//   usage: param_count_cost <cubin or fatbin> [N=100000]
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(n);
  if (b && fread(b, 1, n, f) != (size_t)n) b = NULL;
  fclose(f);
  return b;
}

#define TIME(label, call)                                                                \
  do {                                                                                   \
    CUresult r_ = CUDA_SUCCESS;                                                          \
    double t0_ = now_us();                                                               \
    for (int i_ = 0; i_ < n; ++i_) r_ = (call);                                          \
    const char *name_ = "?";                                                             \
    cuGetErrorName(r_, &name_);                                                          \
    printf("%-58s %8.4f us  %s\n", label, (now_us() - t0_) / n, name_);                  \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <cubin or fatbin> [N]\n", argv[0]);
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 100000;
  void *image = read_all(argv[1]);
  CUdevice d;
  CUcontext c;
  CUlibrary lib;
  if (!image || cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c) ||
      cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0)) {
    fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  unsigned count = 0;
  cuLibraryGetKernelCount(&count, lib);
  CUkernel *ks = calloc(count ? count : 1, sizeof *ks), k = NULL;
  cuLibraryEnumerateKernels(ks, count, lib);
  size_t params = 0, off, size;
  for (unsigned i = 0; i < count && !k; ++i) {
    size_t p = 0;
    while (cuKernelGetParamInfo(ks[i], p, &off, &size) == CUDA_SUCCESS) ++p;
    if (p >= 2) k = ks[i], params = p;
  }
  if (!k) {
    fprintf(stderr, "no kernel with two parameters or more\n");
    return 1;
  }
  const char *kname = "?";
  cuKernelGetName(&kname, k);
  CUfunction f = NULL;
  cuKernelGetFunction(&f, k);
  CUlibrary owner = NULL;
  printf("kernel %s: %zu parameters; %d calls each\n", kname, params, n);
  TIME("cuKernelGetParamInfo, the last parameter", cuKernelGetParamInfo(k, params - 1, &off, &size));
  TIME("cuKernelGetParamInfo, past the last", cuKernelGetParamInfo(k, params, &off, &size));
  TIME("cuKernelGetParamInfo, past the last, NULL outputs", cuKernelGetParamInfo(k, params, NULL, NULL));
  TIME("cuKernelGetParamInfo, index SIZE_MAX", cuKernelGetParamInfo(k, SIZE_MAX, &off, &size));
  TIME("cuFuncGetParamInfo, the last parameter", cuFuncGetParamInfo(f, params - 1, &off, &size));
  TIME("cuFuncGetParamInfo, past the last", cuFuncGetParamInfo(f, params, &off, &size));
  TIME("cuKernelGetLibrary", cuKernelGetLibrary(&owner, k));
  TIME("cuKernelGetName", cuKernelGetName(&kname, k));
  TIME("cuKernelGetFunction", cuKernelGetFunction(&f, k));
  TIME("cuKernelGetAttribute(NUM_REGS)", cuKernelGetAttribute((int *)&off, CU_FUNC_ATTRIBUTE_NUM_REGS, k, d));
  cuLibraryUnload(lib);
  return 0;
}
