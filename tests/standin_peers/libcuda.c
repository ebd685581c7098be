/* A stand-in libcuda for tests/peers.rs: no GPU, but what C++-name lookup and preloading rest
 * on, observable from the test:
 *  - CUDYN_STANDIN_DEVICES devices (default 2), each sm_90, named "Stand-in GPU <n>", each
 *    with a primary context; the current context is per thread, as in CUDA;
 *  - every library holds the kernels named in CUDYN_STANDIN_KERNELS (comma-separated, the
 *    names the test read from a real cubin), found by exact name only, listed in that order;
 *  - cuLibraryGetModule and cuKernelGetFunction need a current context and act on its device;
 *    cuFuncLoad marks a kernel loaded on that device (standin_loaded counts them);
 *  - CUDYN_STANDIN_FAIL="<device>:<kernel>" makes cuFuncLoad of that kernel on that device
 *    fail with CUDA_ERROR_OUT_OF_MEMORY (2); "<device>:" makes cuLibraryGetModule fail there
 *    with CUDA_ERROR_NO_BINARY_FOR_GPU (209); CUDYN_STANDIN_FAIL_CODE=<n> fails either with n;
 *  - a call on a library handle that is not live is answered CUDA_ERROR_INVALID_HANDLE and
 *    counted (standin_dead_library_uses): the real driver would crash. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { MAXD = 8, MAXK = 32, MAXL = 8, NAMELEN = 256 };
typedef struct { int lib, idx; } kern;
typedef struct { int live; } libr;
typedef struct { int dev; } ctx;
typedef struct { int lib, dev, k; } func;

static int ndev = 2, nk = 0, fail_dev = -1, fail_code, inited;
static char names[MAXK][NAMELEN], fail_kernel[NAMELEN];
static kern K[MAXL][MAXK];
static libr L[MAXL];
static ctx C[MAXD];
static func F[MAXL][MAXD][MAXK];
static int loaded[MAXL][MAXD][MAXK], modules[MAXL][MAXD], retains[MAXD];
static long dead_lib_uses, get_function_calls;
static __thread ctx *cur;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void init(void) {
  if (inited) return;
  inited = 1;
  const char *d = getenv("CUDYN_STANDIN_DEVICES");
  if (d && *d) ndev = atoi(d) < 1 ? 1 : atoi(d) > MAXD ? MAXD : atoi(d);
  for (int i = 0; i < MAXD; i++) C[i].dev = i;
  const char *ks = getenv("CUDYN_STANDIN_KERNELS");
  while (ks && *ks && nk < MAXK) {
    const char *e = strchr(ks, ',');
    size_t n = e ? (size_t)(e - ks) : strlen(ks);
    if (n >= NAMELEN) n = NAMELEN - 1;
    memcpy(names[nk], ks, n);
    names[nk++][n] = 0;
    ks = e ? e + 1 : NULL;
  }
  const char *fc = getenv("CUDYN_STANDIN_FAIL_CODE");
  if (fc && *fc) fail_code = atoi(fc);
  const char *f = getenv("CUDYN_STANDIN_FAIL");
  if (f && *f) {
    fail_dev = atoi(f);
    const char *c = strchr(f, ':');
    if (c) snprintf(fail_kernel, sizeof fail_kernel, "%s", c + 1);
  }
}

/* Control and observation, for the tests. */
int standin_loaded(int lib_slot, int dev) {
  int n = 0;
  pthread_mutex_lock(&mu);
  for (int k = 0; k < nk; k++) n += loaded[lib_slot][dev][k];
  pthread_mutex_unlock(&mu);
  return n;
}
int standin_modules(int lib_slot, int dev) { return modules[lib_slot][dev]; }
int standin_retains(int dev) { return retains[dev]; }
long standin_dead_library_uses(void) { return __atomic_load_n(&dead_lib_uses, __ATOMIC_SEQ_CST); }
long standin_get_function_calls(void) { return __atomic_load_n(&get_function_calls, __ATOMIC_SEQ_CST); }
/* This thread's current context, by device (-1: none), for the tests to set and read. */
void standin_make_current(int dev) { cur = dev >= 0 && dev < ndev ? &C[dev] : 0; }
int standin_current_device(void) { return cur ? cur->dev : -1; }
/* The slot of a library handle (-1 if not one of ours). */
int standin_library_slot(void *l) {
  uintptr_t p = (uintptr_t)l, b = (uintptr_t)L;
  if (p < b || p >= b + sizeof L || (p - b) % sizeof(libr)) return -1;
  return (int)((p - b) / sizeof(libr));
}

static libr *live_lib(void *l) {
  int i = standin_library_slot(l);
  if (i < 0 || !L[i].live) {
    __atomic_add_fetch(&dead_lib_uses, 1, __ATOMIC_SEQ_CST);
    return 0;
  }
  return &L[i];
}

static CUresult s_init(unsigned f) { (void)f; init(); return 0; }
static CUresult s_ver(int *v) { *v = 13000; return 0; }
static CUresult s_count(int *n) { init(); *n = ndev; return 0; }
static CUresult s_attr(int *v, int a, int d) {
  if (d < 0 || d >= ndev) return 101;
  *v = a == 75 ? 9 : 0;
  return 0;
}
static CUresult s_devget(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= ndev) return 101;
  *dev = ordinal;
  return 0;
}
static CUresult s_devname(char *buf, int len, int dev) {
  if (dev < 0 || dev >= ndev) return 101;
  snprintf(buf, (size_t)len, "Stand-in GPU %d", dev);
  return 0;
}
static CUresult s_ctxget(void **c) { *c = cur; return 0; }
static CUresult s_ctxset(void *c) {
  uintptr_t p = (uintptr_t)c, b = (uintptr_t)C;
  if (c && (p < b || p >= b + sizeof C)) return 201;
  cur = c;
  return 0;
}
static CUresult s_ctxdev(int *d) {
  if (!cur) return 201;
  *d = cur->dev;
  return 0;
}
static CUresult s_retain(void **c, int d) {
  if (d < 0 || d >= ndev) return 101;
  __atomic_add_fetch(&retains[d], 1, __ATOMIC_SEQ_CST);
  *c = &C[d];
  return 0;
}
static CUresult s_errname(CUresult e, const char **s) {
  *s = e == 2     ? "CUDA_ERROR_OUT_OF_MEMORY"
       : e == 101 ? "CUDA_ERROR_INVALID_DEVICE"
       : e == 201 ? "CUDA_ERROR_INVALID_CONTEXT"
       : e == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU"
       : e == 400 ? "CUDA_ERROR_INVALID_HANDLE"
       : e == 500 ? "CUDA_ERROR_NOT_FOUND"
                  : "CUDA_ERROR_UNKNOWN";
  return 0;
}
static CUresult s_errstr(CUresult e, const char **s) { return s_errname(e, s); }

static CUresult s_libload(void **out, const void *code, void *a, void *b, unsigned n, void *c, void *d, unsigned m) {
  (void)code; (void)a; (void)b; (void)n; (void)c; (void)d; (void)m;
  init();
  pthread_mutex_lock(&mu);
  int li = -1;
  for (int i = 0; i < MAXL && li < 0; i++)
    if (!L[i].live) li = i;
  if (li < 0) {
    pthread_mutex_unlock(&mu);
    return 2;
  }
  L[li].live = 1;
  memset(loaded[li], 0, sizeof loaded[li]);
  memset(modules[li], 0, sizeof modules[li]);
  for (int k = 0; k < nk; k++) K[li][k] = (kern){li, k};
  *out = &L[li];
  pthread_mutex_unlock(&mu);
  return 0;
}
static CUresult s_libunload(void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  if (lb) lb->live = 0;
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_getkernel(void **k, void *l, const char *name) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  CUresult r = lb ? 500 : 400;
  int li = standin_library_slot(l);
  for (int j = 0; lb && j < nk; j++)
    if (!strcmp(names[j], name)) {
      *k = &K[li][j];
      r = 0;
    }
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_kcount(unsigned *n, void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  if (lb) *n = (unsigned)nk;
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_kenum(void **ks, unsigned n, void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  int li = standin_library_slot(l);
  for (unsigned j = 0; lb && j < n && (int)j < nk; j++) ks[j] = &K[li][j];
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static kern *kern_of(void *k) {
  uintptr_t p = (uintptr_t)k, b = (uintptr_t)K;
  if (p < b || p >= b + sizeof K || (p - b) % sizeof(kern)) return 0;
  kern *kk = k;
  return L[kk->lib].live && kk->idx < nk ? kk : 0;
}
static CUresult s_kname(const char **p, void *k) {
  kern *kk = kern_of(k);
  if (!kk) return 400;
  *p = names[kk->idx];
  return 0;
}
static CUresult s_param(void *k, size_t i, size_t *off, size_t *sz) {
  (void)i; (void)off; (void)sz;
  return kern_of(k) ? 1 : 400;
}
static CUresult s_module(void **m, void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  int li = standin_library_slot(l);
  CUresult r = !lb ? 400 : !cur ? 201 : cur->dev == fail_dev && !fail_kernel[0] ? (fail_code ? fail_code : 209) : 0;
  if (!r) {
    modules[li][cur->dev]++;
    *m = lb;
  }
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_kfunc(void **f, void *k) {
  __atomic_add_fetch(&get_function_calls, 1, __ATOMIC_SEQ_CST);
  kern *kk = kern_of(k);
  if (!kk) return 400;
  if (!cur) return 201;
  F[kk->lib][cur->dev][kk->idx] = (func){kk->lib, cur->dev, kk->idx};
  *f = &F[kk->lib][cur->dev][kk->idx];
  return 0;
}
static CUresult s_funcload(void *f) {
  uintptr_t p = (uintptr_t)f, b = (uintptr_t)F;
  if (p < b || p >= b + sizeof F) return 400;
  func *fn = f;
  if (fn->dev == fail_dev && !strcmp(names[fn->k], fail_kernel)) return fail_code ? fail_code : 2;
  pthread_mutex_lock(&mu);
  loaded[fn->lib][fn->dev][fn->k] = 1;
  pthread_mutex_unlock(&mu);
  return 0;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuDeviceGet", (void *)s_devget},
    {"cuDeviceGetName", (void *)s_devname}, {"cuCtxGetCurrent", (void *)s_ctxget},
    {"cuCtxSetCurrent", (void *)s_ctxset}, {"cuCtxGetDevice", (void *)s_ctxdev},
    {"cuDevicePrimaryCtxRetain", (void *)s_retain}, {"cuGetErrorName", (void *)s_errname},
    {"cuGetErrorString", (void *)s_errstr}, {"cuKernelGetParamInfo", (void *)s_param},
    {"cuKernelGetName", (void *)s_kname}, {"cuLibraryLoadData", (void *)s_libload},
    {"cuLibraryUnload", (void *)s_libunload}, {"cuLibraryGetKernel", (void *)s_getkernel},
    {"cuLibraryGetKernelCount", (void *)s_kcount}, {"cuLibraryEnumerateKernels", (void *)s_kenum},
    {"cuLibraryGetModule", (void *)s_module}, {"cuKernelGetFunction", (void *)s_kfunc},
    {"cuFuncLoad", (void *)s_funcload}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(sym, t[i].n)) continue;
    *pfn = t[i].f;
    if (st) *st = 0;
    return 0;
  }
  *pfn = 0;
  if (st) *st = 1;
  return 500;
}
