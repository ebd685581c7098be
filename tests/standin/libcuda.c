/* A stand-in libcuda for the handle tests (tests/handles.rs): no GPU, but the behaviour of
 * driver 580 that cudyn's handle registry rests on, as measured on an H200
 * (cpp-tests/probes/dead_handles.cpp):
 *  - freed kernel and library objects are handed to the next load at once (lowest free slot
 *    first), so one address names kernels of different layouts over time;
 *  - handles of unloaded libraries and their kernels: the real driver crashes on a dead
 *    library and can crash on a dead kernel; here each use is answered
 *    CUDA_ERROR_INVALID_HANDLE (400) and counted (standin_dead_library_uses,
 *    standin_dead_kernel_uses) so a test can assert that cudyn never made one.
 * A launch reads every argument the kernel's layout names, as the driver does: an argument
 * array too short for the kernel runs into the guard page a test puts after it. Each argument
 * is expected to hold the kernel's parameter count (an int); launches whose arguments do not
 * are counted (standin_wrong_layout_launches).
 * CUDYN_STANDIN_VERSION=12040 poses as a 12.4 driver: no cuKernelGetLibrary. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { NK = 64, NL = 16, MAXP = 8, KPL = 4 };
typedef struct { int live, lib, nparams; size_t sizes[MAXP]; char name[32]; } kern;
typedef struct { int live, nk, k[KPL]; } libr;
static kern K[NK];
static libr L[NL];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int next_nk = 1, next_np[KPL] = {2};
static long dead_lib_uses, dead_kernel_uses, wrong_layout, launches;
static int version = 13000;

/* Control, for the tests: the kernels of this thread's next load (names k0, k1, ...). */
void standin_next_library(int nkernels, const int *nparams) {
  next_nk = nkernels > KPL ? KPL : nkernels;
  for (int i = 0; i < next_nk; i++) next_np[i] = nparams[i] > MAXP ? MAXP : nparams[i];
}
long standin_dead_library_uses(void) { return __atomic_load_n(&dead_lib_uses, __ATOMIC_SEQ_CST); }
long standin_dead_kernel_uses(void) { return __atomic_load_n(&dead_kernel_uses, __ATOMIC_SEQ_CST); }
long standin_wrong_layout_launches(void) { return __atomic_load_n(&wrong_layout, __ATOMIC_SEQ_CST); }
long standin_launches(void) { return __atomic_load_n(&launches, __ATOMIC_SEQ_CST); }

static int kidx(void *k) {
  uintptr_t p = (uintptr_t)k, b = (uintptr_t)K;
  if (p < b || p >= b + sizeof K || (p - b) % sizeof(kern)) return -1;
  return (int)((p - b) / sizeof(kern));
}
static int lidx(void *l) {
  uintptr_t p = (uintptr_t)l, b = (uintptr_t)L;
  if (p < b || p >= b + sizeof L || (p - b) % sizeof(libr)) return -1;
  return (int)((p - b) / sizeof(libr));
}
/* The real driver may crash on a dead kernel too (it did inside cuKernelGetParamInfo): here the
 * call is answered CUDA_ERROR_INVALID_HANDLE and counted. */
static int live_kernel(void *k) {
  int i = kidx(k), ok = i >= 0 && K[i].live;
  if (!ok) __atomic_add_fetch(&dead_kernel_uses, 1, __ATOMIC_SEQ_CST);
  return ok;
}
/* Caller holds mu. A dead library would crash the real driver: count it. */
static libr *live_lib(void *l) {
  int i = lidx(l);
  if (i < 0 || !L[i].live) { __atomic_add_fetch(&dead_lib_uses, 1, __ATOMIC_SEQ_CST); return 0; }
  return &L[i];
}

static CUresult s_init(unsigned f) { (void)f; return 0; }
static CUresult s_ver(int *v) { *v = version; return 0; }
static CUresult s_count(int *n) { *n = 1; return 0; }
static CUresult s_attr(int *v, int a, int d) { (void)d; *v = a == 75 ? 9 : 0; return 0; }
static int ctx_obj;
static __thread void *cur;
static CUresult s_ctxget(void **c) { *c = cur; return 0; }
static CUresult s_ctxset(void *c) { cur = c; return 0; }
static CUresult s_ctxdev(int *d) { *d = 0; return 0; }
static CUresult s_retain(void **c, int d) { (void)d; *c = &ctx_obj; return 0; }
static CUresult s_errname(CUresult e, const char **s) {
  *s = e == 400 ? "CUDA_ERROR_INVALID_HANDLE" : e == 500 ? "CUDA_ERROR_NOT_FOUND" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
static CUresult s_errstr(CUresult e, const char **s) { return s_errname(e, s); }

static CUresult s_libload(void **out, const void *code, void *a, void *b, unsigned n, void *c, void *d, unsigned m) {
  (void)code; (void)a; (void)b; (void)n; (void)c; (void)d; (void)m;
  pthread_mutex_lock(&mu);
  int li = -1;
  for (int i = 0; i < NL && li < 0; i++) if (!L[i].live) li = i;
  if (li < 0) { pthread_mutex_unlock(&mu); return 2; }
  L[li].live = 1; L[li].nk = 0;
  for (int j = 0; j < next_nk; j++) {
    int ki = -1;
    for (int i = 0; i < NK && ki < 0; i++) if (!K[i].live) ki = i;
    if (ki < 0) break;
    K[ki].live = 1; K[ki].lib = li; K[ki].nparams = next_np[j];
    for (int p = 0; p < MAXP; p++) K[ki].sizes[p] = sizeof(int);
    memcpy(K[ki].name, "k0", 3); K[ki].name[1] = (char)('0' + j);
    L[li].k[L[li].nk++] = ki;
  }
  *out = &L[li];
  pthread_mutex_unlock(&mu);
  return 0;
}
static CUresult s_libunload(void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  if (lb) { for (int j = 0; j < lb->nk; j++) K[lb->k[j]].live = 0; lb->live = 0; }
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_getkernel(void **k, void *l, const char *name) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  CUresult r = lb ? 500 : 400;
  for (int j = 0; lb && j < lb->nk; j++) if (!strcmp(K[lb->k[j]].name, name)) { *k = &K[lb->k[j]]; r = 0; }
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_kcount(unsigned *n, void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  if (lb) *n = (unsigned)lb->nk;
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_kenum(void **ks, unsigned n, void *l) {
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  for (unsigned j = 0; lb && j < n && (int)j < lb->nk; j++) ks[j] = &K[lb->k[j]];
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_kname(const char **p, void *k) {
  pthread_mutex_lock(&mu);
  int ok = live_kernel(k);
  if (ok) *p = ((kern *)k)->name;
  pthread_mutex_unlock(&mu);
  return ok ? 0 : 400;
}
static CUresult s_param(void *k, size_t i, size_t *off, size_t *sz) {
  pthread_mutex_lock(&mu);
  CUresult r = 400;
  if (live_kernel(k)) {
    kern *kk = k;
    r = i < (size_t)kk->nparams ? 0 : 1;
    if (!r) { *off = i * sizeof(int); *sz = kk->sizes[i]; }
  }
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_klib(void **l, void *k) {
  pthread_mutex_lock(&mu);
  int ok = live_kernel(k);
  if (ok) *l = &L[((kern *)k)->lib];
  pthread_mutex_unlock(&mu);
  return ok ? 0 : 400;
}
static CUresult s_launch(const void *cfg, void *f, void **p, void **e) {
  (void)cfg; (void)e;
  pthread_mutex_lock(&mu);
  int ok = live_kernel(f), n = ok ? ((kern *)f)->nparams : 0;
  pthread_mutex_unlock(&mu);
  if (!ok) return 400;
  /* The driver reads one argument per parameter; so does this. */
  int wrong = 0;
  for (int i = 0; i < n; i++) { int v; memcpy(&v, p[i], sizeof v); wrong |= v != n; }
  if (wrong) __atomic_add_fetch(&wrong_layout, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&launches, 1, __ATOMIC_SEQ_CST);
  return 0;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  const char *v = getenv("CUDYN_STANDIN_VERSION");
  if (v && *v) version = atoi(v);
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuCtxGetCurrent", (void *)s_ctxget},
    {"cuCtxSetCurrent", (void *)s_ctxset}, {"cuCtxGetDevice", (void *)s_ctxdev},
    {"cuDevicePrimaryCtxRetain", (void *)s_retain}, {"cuGetErrorName", (void *)s_errname},
    {"cuGetErrorString", (void *)s_errstr}, {"cuKernelGetParamInfo", (void *)s_param},
    {"cuKernelGetLibrary", (void *)s_klib}, {"cuKernelGetName", (void *)s_kname},
    {"cuLaunchKernelEx", (void *)s_launch}, {"cuLibraryLoadData", (void *)s_libload},
    {"cuLibraryUnload", (void *)s_libunload}, {"cuLibraryGetKernel", (void *)s_getkernel},
    {"cuLibraryGetKernelCount", (void *)s_kcount}, {"cuLibraryEnumerateKernels", (void *)s_kenum}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(sym, t[i].n)) continue;
    if (version < 12050 && !strcmp(sym, "cuKernelGetLibrary")) break;
    *pfn = t[i].f; if (st) *st = 0; return 0;
  }
  *pfn = 0; if (st) *st = 1; return 500;
}
/* The same entry points, exported, so a test can load and unload "outside cudyn". */
CUresult cuLibraryLoadData(void **l, const void *c, void *a, void *b, unsigned n, void *d, void *e, unsigned m) {
  return s_libload(l, c, a, b, n, d, e, m);
}
CUresult cuLibraryUnload(void *l) { return s_libunload(l); }
CUresult cuLibraryGetKernel(void **k, void *l, const char *name) { return s_getkernel(k, l, name); }
