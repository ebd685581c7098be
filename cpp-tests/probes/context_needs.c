// Which driver calls on a library's kernels need a current context, and what making one costs.
// Raw driver only, on a thread with no current context and no primary context active: each
// call is made with none current and its CUresult printed; then the cost of retaining and
// releasing device 0's primary context when no one else holds it (the context is created and
// destroyed each time) and when someone does (a reference count).
//   build: gcc -O2 -o context_needs context_needs.c -I$CUDA_PATH/include -L$CUDA_PATH/lib64/stubs -lcuda
//   usage: context_needs <cubin or fatbin>
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int active(CUdevice d) {
  unsigned flags = 0;
  int on = -1;
  cuDevicePrimaryCtxGetState(d, &flags, &on);
  return on;
}

static void show(const char *what, CUresult r, CUdevice d) {
  const char *name = "?";
  cuGetErrorName(r, &name);
  CUcontext c = NULL;
  cuCtxGetCurrent(&c);
  printf("%-34s %-28s primary active %d, current %s\n", what, name, active(d), c ? "set" : "none");
}

// What a library does for one call on a thread with no context: retain device d's primary
// context, make it current, ask, pop it and release it.
static void borrow_and_ask(CUdevice d, CUkernel k) {
  CUcontext c = NULL;
  CUfunction fn = NULL;
  cuDevicePrimaryCtxRetain(&c, d);
  cuCtxPushCurrent(c);
  cuKernelGetFunction(&fn, k);
  cuCtxPopCurrent(&c);
  cuDevicePrimaryCtxRelease(d);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s <cubin or fatbin>\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *img = malloc(n);
  if (fread(img, 1, n, f) != (size_t)n) return 2;
  fclose(f);
  CUdevice d = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&d, 0) != CUDA_SUCCESS) {
    printf("no GPU\n");
    return 77;
  }
  printf("before anything: primary active %d\n", active(d));
  CUlibrary lib = NULL;
  show("cuLibraryLoadData", cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0), d);
  unsigned count = 0;
  show("cuLibraryGetKernelCount", cuLibraryGetKernelCount(&count, lib), d);
  CUkernel ks[64];
  if (count > 64) count = 64;
  show("cuLibraryEnumerateKernels", cuLibraryEnumerateKernels(ks, count, lib), d);
  if (count == 0) return 1;
  CUkernel k = ks[0];
  const char *name = NULL;
  show("cuKernelGetName", cuKernelGetName(&name, k), d);
  size_t off = 0, size = 0;
  show("cuKernelGetParamInfo(0)", cuKernelGetParamInfo(k, 0, &off, &size), d);
  int v = 0;
  show("cuKernelGetAttribute(NUM_REGS)", cuKernelGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, k, d), d);
  CUlibrary owner = NULL;
  show("cuKernelGetLibrary", cuKernelGetLibrary(&owner, k), d);
  CUfunction fn = NULL;
  show("cuKernelGetFunction", cuKernelGetFunction(&fn, k), d);
  CUmodule mod = NULL;
  show("cuLibraryGetModule", cuLibraryGetModule(&mod, lib), d);

  // The cost of a primary context for one call.
  const int rounds = 5;
  double t0 = now_ms();
  for (int i = 0; i < rounds; ++i) borrow_and_ask(d, k);
  double alone = (now_ms() - t0) / rounds;
  CUcontext held = NULL;
  cuDevicePrimaryCtxRetain(&held, d);
  t0 = now_ms();
  for (int i = 0; i < 1000; ++i) borrow_and_ask(d, k);
  double shared = (now_ms() - t0) / 1000;
  printf("retain + push + cuKernelGetFunction + pop + release: %.3f ms when no one else holds the primary context, "
         "%.4f ms when someone does\n", alone, shared);
  cuDevicePrimaryCtxRelease(d);
  show("cuLibraryUnload", cuLibraryUnload(lib), d);
  return 0;
}
