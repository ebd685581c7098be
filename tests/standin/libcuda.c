/* A stand-in libcuda for the handle tests (tests/handles.rs, tests/fork.rs): no GPU, but the
 * behaviour of driver 580 that cudyn's handle registry rests on, as measured on an H200
 * (cpp-tests/probes/dead_handles.cpp):
 *  - freed kernel and library objects are handed to the next load at once (lowest free slot
 *    first), so one address names kernels of different layouts over time;
 *  - handles of unloaded libraries and their kernels: the real driver crashes on a dead
 *    library and can crash on a dead kernel; here each use is answered
 *    CUDA_ERROR_INVALID_HANDLE (400) and counted (standin_dead_library_uses,
 *    standin_dead_kernel_uses) so a test can assert that cudyn never made one;
 *  - a kernel's name lives in memory of its library: unloading makes that page unreadable, so
 *    reading a name after its library is gone faults, as reading freed memory may;
 *  - in a child after fork() every call fails with CUDA_ERROR_NOT_INITIALIZED (3) without
 *    touching the parent's state or locks, as the real driver poisons a forked child.
 * A launch reads every argument the kernel's layout names, as the driver does: an argument
 * array too short for the kernel runs into the guard page a test puts after it. Each argument
 * is expected to hold the kernel's parameter count (an int); launches whose arguments do not
 * are counted (standin_wrong_layout_launches).
 * CUDYN_STANDIN_VERSION=12040 poses as a 12.4 driver: no cuKernelGetLibrary.
 * CUDYN_STANDIN_SLOW=N (or standin_set_slow) makes each kernel query and launch, and
 * cuLibraryGetKernel and cuLibraryEnumerateKernels, wait about N microseconds between entering
 * and checking the handle, and cuKernelGetParamInfo again before it returns: the windows a
 * race needs, made wide enough to hit. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
enum { NK = 128, NL = 64, MAXP = 8, KPL = 4, NAME = 32 };
typedef struct { int live, lib, nparams; size_t sizes[MAXP]; } kern;
typedef struct { int live, nk, k[KPL]; } libr;
static kern K[NK];
static libr L[NL];
/* One page per library slot holding its kernels' names; unreadable while the slot is free. */
static char *names[NL];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int next_nk = 1, next_np[KPL] = {2};
static long dead_lib_uses, dead_kernel_uses, wrong_layout, launches, list_calls, param_calls, calls;
static int version = 13000, slow_us, forked, last_jit_options = -1;

/* Control, for the tests: the kernels of this thread's next load (names k0, k1, ...). */
void standin_next_library(int nkernels, const int *nparams) {
  next_nk = nkernels > KPL ? KPL : nkernels;
  for (int i = 0; i < next_nk; i++) next_np[i] = nparams[i] > MAXP ? MAXP : nparams[i];
}
long standin_dead_library_uses(void) { return __atomic_load_n(&dead_lib_uses, __ATOMIC_SEQ_CST); }
long standin_dead_kernel_uses(void) { return __atomic_load_n(&dead_kernel_uses, __ATOMIC_SEQ_CST); }
long standin_wrong_layout_launches(void) { return __atomic_load_n(&wrong_layout, __ATOMIC_SEQ_CST); }
long standin_launches(void) { return __atomic_load_n(&launches, __ATOMIC_SEQ_CST); }
/* cuLibraryGetKernelCount and cuLibraryEnumerateKernels calls. */
long standin_list_calls(void) { return __atomic_load_n(&list_calls, __ATOMIC_SEQ_CST); }
/* cuKernelGetParamInfo calls. */
long standin_param_calls(void) { return __atomic_load_n(&param_calls, __ATOMIC_SEQ_CST); }
/* Every entry point's calls, cuGetProcAddress_v2 not counted. */
long standin_calls(void) { return __atomic_load_n(&calls, __ATOMIC_SEQ_CST); }
void standin_set_slow(int us) { __atomic_store_n(&slow_us, us, __ATOMIC_SEQ_CST); }
/* The number of JIT options the last cuLibraryLoadData was given. */
int standin_last_jit_options(void) { return __atomic_load_n(&last_jit_options, __ATOMIC_SEQ_CST); }

#define ENTER()                                  \
  do {                                           \
    __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST); \
    if (forked) return 3;                        \
  } while (0)

static void slow(void) {
  int us = __atomic_load_n(&slow_us, __ATOMIC_RELAXED);
  if (us <= 0) return;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

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
 * call is answered CUDA_ERROR_INVALID_HANDLE and counted. Caller holds mu. */
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
static char *name_of(int ki) {
  int li = K[ki].lib, j = 0;
  while (j < L[li].nk && L[li].k[j] != ki) j++;
  return names[li] + j * NAME;
}

static CUresult s_init(unsigned f) { ENTER(); (void)f; return 0; }
static CUresult s_ver(int *v) { ENTER(); *v = version; return 0; }
/* Hostile answers, for the tests: a device count and a library's kernel count (0: the real
 * one), and a wait in each cuDeviceGetAttribute (ms). */
static int device_count_override, attribute_wait_ms;
static unsigned kernel_count_override;
void standin_set_device_count(int n) { __atomic_store_n(&device_count_override, n, __ATOMIC_SEQ_CST); }
void standin_set_kernel_count(unsigned n) { __atomic_store_n(&kernel_count_override, n, __ATOMIC_SEQ_CST); }
void standin_set_attribute_wait(int ms) { __atomic_store_n(&attribute_wait_ms, ms, __ATOMIC_SEQ_CST); }
static CUresult s_count(int *n) {
  ENTER();
  int o = __atomic_load_n(&device_count_override, __ATOMIC_SEQ_CST);
  *n = o ? o : 1;
  return 0;
}
static CUresult s_attr(int *v, int a, int d) {
  ENTER();
  (void)d;
  int ms = __atomic_load_n(&attribute_wait_ms, __ATOMIC_SEQ_CST);
  if (ms) usleep((useconds_t)ms * 1000);
  *v = a == 75 ? 9 : 0;
  return 0;
}
static int ctx_obj;
static __thread void *cur;
static CUresult s_ctxget(void **c) { ENTER(); *c = cur; return 0; }
static CUresult s_ctxset(void *c) { ENTER(); cur = c; return 0; }
static CUresult s_ctxdev(int *d) { ENTER(); *d = 0; return 0; }
static CUresult s_retain(void **c, int d) { ENTER(); (void)d; *c = &ctx_obj; return 0; }
static CUresult s_errname(CUresult e, const char **s) {
  *s = e == 400 ? "CUDA_ERROR_INVALID_HANDLE" : e == 500 ? "CUDA_ERROR_NOT_FOUND"
     : e == 3 ? "CUDA_ERROR_NOT_INITIALIZED" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
static CUresult s_errstr(CUresult e, const char **s) { return s_errname(e, s); }

static CUresult s_libload(void **out, const void *code, void *a, void *b, unsigned n, void *c, void *d, unsigned m) {
  ENTER();
  (void)code; (void)a; (void)b; (void)c; (void)d; (void)m;
  __atomic_store_n(&last_jit_options, (int)n, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&mu);
  int li = -1;
  for (int i = 0; i < NL && li < 0; i++) if (!L[i].live) li = i;
  if (li < 0) { pthread_mutex_unlock(&mu); return 2; }
  long page = sysconf(_SC_PAGESIZE);
  if (!names[li]) {
    void *p = mmap(0, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { pthread_mutex_unlock(&mu); return 2; }
    names[li] = p;
  }
  mprotect(names[li], (size_t)page, PROT_READ | PROT_WRITE);
  L[li].live = 1; L[li].nk = 0;
  for (int j = 0; j < next_nk; j++) {
    int ki = -1;
    for (int i = 0; i < NK && ki < 0; i++) if (!K[i].live) ki = i;
    if (ki < 0) break;
    K[ki].live = 1; K[ki].lib = li; K[ki].nparams = next_np[j];
    for (int p = 0; p < MAXP; p++) K[ki].sizes[p] = sizeof(int);
    char *nm = names[li] + j * NAME;
    memcpy(nm, "k0", 3); nm[1] = (char)('0' + j);
    L[li].k[L[li].nk++] = ki;
  }
  *out = &L[li];
  pthread_mutex_unlock(&mu);
  return 0;
}
static CUresult s_libunload(void *l) {
  ENTER();
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  if (lb) {
    for (int j = 0; j < lb->nk; j++) K[lb->k[j]].live = 0;
    lb->live = 0;
    /* The names go with the library: a name read after this faults. */
    mprotect(names[lb - L], (size_t)sysconf(_SC_PAGESIZE), PROT_NONE);
  }
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_getkernel(void **k, void *l, const char *name) {
  ENTER();
  slow();
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  CUresult r = lb ? 500 : 400;
  for (int j = 0; lb && j < lb->nk; j++) if (!strcmp(name_of(lb->k[j]), name)) { *k = &K[lb->k[j]]; r = 0; }
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_kcount(unsigned *n, void *l) {
  ENTER();
  __atomic_add_fetch(&list_calls, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  unsigned o = __atomic_load_n(&kernel_count_override, __ATOMIC_SEQ_CST);
  if (lb) *n = o ? o : (unsigned)lb->nk;
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_kenum(void **ks, unsigned n, void *l) {
  ENTER();
  __atomic_add_fetch(&list_calls, 1, __ATOMIC_SEQ_CST);
  slow();
  pthread_mutex_lock(&mu);
  libr *lb = live_lib(l);
  for (unsigned j = 0; lb && j < n && (int)j < lb->nk; j++) ks[j] = &K[lb->k[j]];
  pthread_mutex_unlock(&mu);
  return lb ? 0 : 400;
}
static CUresult s_kname(const char **p, void *k) {
  ENTER();
  slow();
  pthread_mutex_lock(&mu);
  int ok = live_kernel(k);
  if (ok) *p = name_of(kidx(k));
  pthread_mutex_unlock(&mu);
  return ok ? 0 : 400;
}
static CUresult s_param(void *k, size_t i, size_t *off, size_t *sz) {
  ENTER();
  __atomic_add_fetch(&param_calls, 1, __ATOMIC_SEQ_CST);
  slow();
  pthread_mutex_lock(&mu);
  CUresult r = 400;
  if (live_kernel(k)) {
    kern *kk = k;
    r = i < (size_t)kk->nparams ? 0 : 1;
    if (!r) { *off = i * sizeof(int); *sz = kk->sizes[i]; }
  }
  pthread_mutex_unlock(&mu);
  /* The answer is on its way back while the library may be unloaded and reloaded. */
  slow();
  return r;
}
static CUresult s_klib(void **l, void *k) {
  ENTER();
  slow();
  pthread_mutex_lock(&mu);
  int ok = live_kernel(k);
  if (ok) *l = &L[((kern *)k)->lib];
  pthread_mutex_unlock(&mu);
  return ok ? 0 : 400;
}
/* The function of a kernel in the current context: one object per kernel slot. */
static char funcs[NK];
static CUresult s_kfunc(void **f, void *k) {
  ENTER();
  slow();
  pthread_mutex_lock(&mu);
  int ok = live_kernel(k);
  if (ok) *f = &funcs[kidx(k)];
  pthread_mutex_unlock(&mu);
  return ok ? 0 : 400;
}
static CUresult s_launch(const void *cfg, void *f, void **p, void **e) {
  ENTER();
  (void)cfg; (void)e;
  slow();
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

/* cuOccupancyMaxPotentialBlockSizeWithFlags as CUDA's calculator walks it: from the limit (the
 * kernel's own 1000 threads, or the caller's smaller limit) down in steps of the warp size, the
 * first step being the limit itself (1000, 992, 960, ...), each size's dynamic shared memory
 * asked of the callback; the largest block whose memory fits in 48 KiB wins. The callback's
 * calls are counted (standin_occ_callbacks). */
static long occ_callbacks;
long standin_occ_callbacks(void) { return __atomic_load_n(&occ_callbacks, __ATOMIC_SEQ_CST); }
static CUresult s_occ_size(int *grid, int *block, void *f, size_t (*b2s)(int), size_t smem, int limit, unsigned flags) {
  ENTER();
  (void)flags;
  pthread_mutex_lock(&mu);
  int ok = f >= (void *)funcs && f < (void *)(funcs + NK) && K[(char *)f - funcs].live;
  if (!ok) __atomic_add_fetch(&dead_kernel_uses, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&mu);
  if (!ok) return 400;
  int top = limit > 0 && limit < 1000 ? limit : 1000, best = 0;
  for (int a = (top + 31) / 32 * 32; a > 0; a -= 32) {
    int b = a < top ? a : top;
    size_t need = smem;
    if (b2s) { need = b2s(b); __atomic_add_fetch(&occ_callbacks, 1, __ATOMIC_SEQ_CST); }
    if (need <= 48 * 1024 && b > best) best = b;
  }
  if (!best) return 1;
  *grid = 132; *block = best;
  return 0;
}

/* A forked child cannot use the parent's driver: every call fails from now on, and nothing of
 * the parent's (its lock, its objects) is touched. */
static void in_child(void) { forked = 1; }
__attribute__((constructor)) static void at_load(void) { pthread_atfork(0, 0, in_child); }

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  const char *v = getenv("CUDYN_STANDIN_VERSION");
  if (v && *v) version = atoi(v);
  const char *s = getenv("CUDYN_STANDIN_SLOW");
  if (s && *s) slow_us = atoi(s);
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuCtxGetCurrent", (void *)s_ctxget},
    {"cuCtxSetCurrent", (void *)s_ctxset}, {"cuCtxGetDevice", (void *)s_ctxdev},
    {"cuDevicePrimaryCtxRetain", (void *)s_retain}, {"cuGetErrorName", (void *)s_errname},
    {"cuGetErrorString", (void *)s_errstr}, {"cuKernelGetParamInfo", (void *)s_param},
    {"cuKernelGetLibrary", (void *)s_klib}, {"cuKernelGetName", (void *)s_kname},
    {"cuKernelGetFunction", (void *)s_kfunc},
    {"cuLaunchKernelEx", (void *)s_launch}, {"cuLibraryLoadData", (void *)s_libload},
    {"cuLibraryUnload", (void *)s_libunload}, {"cuLibraryGetKernel", (void *)s_getkernel},
    {"cuLibraryGetKernelCount", (void *)s_kcount}, {"cuLibraryEnumerateKernels", (void *)s_kenum},
    {"cuOccupancyMaxPotentialBlockSizeWithFlags", (void *)s_occ_size}};
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
