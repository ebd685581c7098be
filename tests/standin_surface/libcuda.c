/* A stand-in CUDA driver and runtime in one library, for tests/surface_standin.rs: no GPU, but
 * the state cudyn's calls change, recorded so that a test can read it back through
 * standin_call(what, arg):
 *  - each thread's context stack (push, pop, set current) and every device's primary context
 *    with its retain count: calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT
 *    without one, as the real driver does, and record the context they ran in;
 *  - the JIT and library options of the last library load, the launch attributes of the last
 *    launch (driver or runtime), the arguments of the occupancy calls.
 * Loaded as both CUDYN_LIBCUDA and CUDYN_LIBCUDART (one copy: dlopen of one path), so the runtime
 * calls share the driver's state. Not CUDA; only what the tests need. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { NDEV = 2, DEPTH = 8, MAXA = 16, MAXO = 32 };

typedef struct { int dev; int primary; } ctx_t;
typedef struct { ctx_t *ctx; int kernel; } func_t;
typedef struct { int id; int pad; union { char bytes[64]; long word; } v; } attr_t;
typedef struct { int live; } lib_t;
typedef struct { int nparams; const char *name; } kern_t;

static ctx_t primary[NDEV] = {{0, 1}, {1, 1}}, user[NDEV] = {{0, 0}, {1, 0}};
static int retains[NDEV], retain_calls[NDEV];
/* `lax` 0: the name, parameter and attribute queries each need a context; 1: none does; 2: as
   driver 580, the parameter query alone needs one (cpp-tests/probes/context_needs.c). */
static int lax;
static long param_calls;
static __thread ctx_t *stack[DEPTH];
static __thread int depth;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static lib_t lib;
static kern_t kern = {2, "k0"};
static func_t funcs[2 * NDEV];
static int streams[NDEV];
static long loads, launches, last_api, last_nattr, occ_flags, occ_callbacks, occ_block, cache_cfg, cache_dev;
static long occ_smem, occ_nattr;
static ctx_t *last_ctx, *query_ctx, *occ_ctx;
static attr_t last_attrs[MAXA];
static long jit_n, jit_keys[MAXO], jit_vals[MAXO], lib_n, lib_keys[MAXO], lib_vals[MAXO];

static ctx_t *cur(void) { return depth ? stack[depth - 1] : 0; }
static CUresult need_ctx(ctx_t **where) {
  if (!cur()) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  if (where) *where = cur();
  return 0;
}

static CUresult s_init(unsigned f) { (void)f; return 0; }
static CUresult s_ver(int *v) { *v = 13000; return 0; }
static CUresult s_count(int *n) { *n = NDEV; return 0; }
static CUresult s_attr(int *v, int a, int d) { (void)d; *v = a == 75 ? 9 : 0; return 0; }
static CUresult s_ctxget(ctx_t **c) { *c = cur(); return 0; }
static CUresult s_ctxset(ctx_t *c) {
  if (!c) { if (depth) depth--; return 0; }
  if (depth) stack[depth - 1] = c; else stack[depth++] = c;
  return 0;
}
static CUresult s_push(ctx_t *c) { if (!c || depth == DEPTH) return 1; stack[depth++] = c; return 0; }
static CUresult s_pop(ctx_t **c) { if (!depth) return 201; depth--; if (c) *c = stack[depth]; return 0; }
static CUresult s_ctxdev(int *d) { if (!cur()) return 201; *d = cur()->dev; return 0; }
static CUresult s_retain(ctx_t **c, int d) {
  if (d < 0 || d >= NDEV) return 101;
  pthread_mutex_lock(&mu); retains[d]++; retain_calls[d]++; pthread_mutex_unlock(&mu);
  *c = &primary[d];
  return 0;
}
static CUresult s_release(int d) {
  if (d < 0 || d >= NDEV) return 101;
  pthread_mutex_lock(&mu);
  CUresult r = retains[d] > 0 ? 0 : 709;
  if (!r) retains[d]--;
  pthread_mutex_unlock(&mu);
  return r;
}
static CUresult s_streamctx(int *s, ctx_t **c) {
  if (s < &streams[0] || s >= &streams[NDEV]) return 400;
  *c = &user[s - streams];
  return 0;
}
static CUresult s_errname(CUresult e, const char **s) {
  *s = e == 201 ? "CUDA_ERROR_INVALID_CONTEXT" : e == 500 ? "CUDA_ERROR_NOT_FOUND" : e == 1 ? "CUDA_ERROR_INVALID_VALUE"
                                                                                             : "CUDA_ERROR_UNKNOWN";
  return 0;
}
static CUresult s_errstr(CUresult e, const char **s) { return s_errname(e, s); }

static CUresult s_libload(lib_t **out, const void *code, int *jk, void **jv, unsigned nj, int *lk, void **lv, unsigned nl) {
  (void)code;
  pthread_mutex_lock(&mu);
  loads++;
  jit_n = nj < MAXO ? nj : MAXO;
  for (long i = 0; i < jit_n; i++) { jit_keys[i] = jk[i]; jit_vals[i] = (long)(intptr_t)jv[i]; }
  /* CU_JIT_WALL_TIME: CUDA overwrites the option's value itself with a float (1.5 ms here). */
  for (unsigned i = 0; i < nj; i++)
    if (jk[i] == 2) { float t = 1.5f; memset(&jv[i], 0, sizeof jv[i]); memcpy(&jv[i], &t, sizeof t); }
  lib_n = nl < MAXO ? nl : MAXO;
  for (long i = 0; i < lib_n; i++) { lib_keys[i] = lk[i]; lib_vals[i] = (long)(intptr_t)lv[i]; }
  lib.live = 1;
  pthread_mutex_unlock(&mu);
  *out = &lib;
  return 0;
}
static CUresult s_libunload(lib_t *l) { if (l != &lib || !l->live) return 400; l->live = 0; return 0; }
static CUresult s_getkernel(kern_t **k, lib_t *l, const char *name) {
  if (l != &lib) return 400;
  if (strcmp(name, kern.name)) return 500;
  *k = &kern;
  return 0;
}
static CUresult s_kcount(unsigned *n, lib_t *l) { if (l != &lib) return 400; *n = 1; return 0; }
static CUresult s_kenum(kern_t **ks, unsigned n, lib_t *l) { if (l != &lib) return 400; if (n) ks[0] = &kern; return 0; }
static int globals[NDEV], managed_var;
static CUresult s_global(uintptr_t *p, size_t *n, lib_t *l, const char *name) {
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (l != &lib) return 400;
  if (strcmp(name, "g")) return 500;
  query_ctx = c;
  *p = (uintptr_t)&globals[c->dev];
  if (n) *n = sizeof(int);
  return 0;
}
static CUresult s_managed(uintptr_t *p, size_t *n, lib_t *l, const char *name) {
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (l != &lib) return 400;
  if (strcmp(name, "m")) return 500;
  query_ctx = c;
  *p = (uintptr_t)&managed_var;
  if (n) *n = sizeof(int);
  return 0;
}
static int modules[2 * NDEV];
static CUresult s_module(int **m, lib_t *l) {
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (l != &lib) return 400;
  query_ctx = c;
  *m = &modules[c->dev * 2 + c->primary];
  return 0;
}
static int unified_fn;
static CUresult s_unified(void **p, lib_t *l, const char *name) {
  if (l != &lib) return 400;
  if (strcmp(name, "u")) return 1; /* CUDA_ERROR_INVALID_VALUE, as driver 580 answers */
  *p = &unified_fn;
  return 0;
}
static CUresult s_kname(const char **p, kern_t *k) {
  ctx_t *c = cur();
  CUresult r = lax ? 0 : need_ctx(&c);
  if (r) return r;
  if (k != &kern) return 400;
  query_ctx = c;
  *p = k->name;
  return 0;
}
static CUresult s_param(kern_t *k, size_t i, size_t *off, size_t *sz) {
  ctx_t *c = cur();
  CUresult r = lax == 1 ? 0 : need_ctx(&c);
  if (r) return r;
  if (k != &kern) return 400;
  param_calls++;
  if (c) query_ctx = c;
  if (i >= (size_t)k->nparams) return 1;
  *off = i * sizeof(int);
  *sz = sizeof(int);
  return 0;
}
static CUresult s_kfunc(func_t **f, kern_t *k) {
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (k != &kern) return 400;
  query_ctx = c;
  func_t *fn = &funcs[c->dev * 2 + c->primary];
  fn->ctx = c;
  fn->kernel = 1;
  *f = fn;
  return 0;
}
static CUresult s_kattr(int *v, int a, kern_t *k, int dev) {
  ctx_t *c = cur();
  CUresult r = lax ? 0 : need_ctx(&c);
  if (r) return r;
  if (k != &kern) return 400;
  query_ctx = c;
  *v = a * 100 + dev;
  return 0;
}
static CUresult s_klib(lib_t **l, kern_t *k) { if (k != &kern) return 400; *l = &lib; return 0; }
static CUresult s_cache(kern_t *k, int config, int dev) {
  if (k != &kern) return 400;
  cache_cfg = config;
  cache_dev = dev;
  return 0;
}

/* CUlaunchConfig, as cuda.h lays it out. */
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  void *stream;
  attr_t *attrs;
  unsigned nattrs;
} cfg_t;
static void record_attrs(const attr_t *a, unsigned n) {
  last_nattr = n;
  for (unsigned i = 0; i < n && i < MAXA; i++) last_attrs[i] = a[i];
}
/* A launch writes a node back into a device-updatable entry, as CUDA does in a capture. */
static void write_nodes(attr_t *a, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (a[i].id == 13) memcpy(a[i].v.bytes + 8, &(void *){(void *)0xD00D}, sizeof(void *));
}
static CUresult s_launch(const cfg_t *cfg, kern_t *f, void **p, void **e) {
  (void)p; (void)e;
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (f != &kern) return 400;
  last_ctx = c;
  last_api = 1;
  launches++;
  record_attrs(cfg->attrs, cfg->nattrs);
  write_nodes(cfg->attrs, cfg->nattrs);
  return 0;
}
static CUresult occ_begin(func_t *f) {
  ctx_t *c;
  CUresult r = need_ctx(&c);
  if (r) return r;
  if (!f || f->ctx != c) return 400; /* a function of another context */
  occ_ctx = c;
  return 0;
}
static CUresult s_occ_blocks(int *n, func_t *f, int block, size_t smem, unsigned flags) {
  CUresult r = occ_begin(f);
  if (r) return r;
  if (block <= 0) return 1;
  occ_flags = flags; occ_smem = (long)smem; occ_block = block;
  *n = 2048 / block;
  return 0;
}
/* Picks the largest block (multiple of 32, at most the limit or 1024) whose dynamic shared
 * memory is at most 48 KiB; the minimum grid is 132 SMs times 2048 / block. */
static CUresult s_occ_size(int *grid, int *block, func_t *f, size_t (*b2s)(int), size_t smem, int limit, unsigned flags) {
  CUresult r = occ_begin(f);
  if (r) return r;
  occ_flags = flags; occ_smem = (long)smem;
  int best = 0, top = limit > 0 && limit < 1024 ? limit : 1024;
  for (int b = 32; b <= top; b += 32) {
    size_t need = smem;
    if (b2s) { need = b2s(b); occ_callbacks++; }
    if (need <= 48 * 1024) best = b;
  }
  if (!best) return 1;
  *block = best;
  *grid = 132 * (2048 / best);
  return 0;
}
static CUresult s_occ_smem(size_t *n, func_t *f, int blocks, int block) {
  CUresult r = occ_begin(f);
  if (r) return r;
  *n = (size_t)(1000 * blocks + block);
  return 0;
}
static CUresult s_occ_cluster(int *n, func_t *f, const cfg_t *cfg) {
  CUresult r = occ_begin(f);
  if (r) return r;
  occ_nattr = cfg->nattrs;
  record_attrs(cfg->attrs, cfg->nattrs);
  *n = 8;
  return 0;
}
static CUresult s_occ_clusters(int *n, func_t *f, const cfg_t *cfg) {
  CUresult r = occ_begin(f);
  if (r) return r;
  occ_nattr = cfg->nattrs;
  record_attrs(cfg->attrs, cfg->nattrs);
  *n = 3;
  return 0;
}

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuCtxGetCurrent", (void *)s_ctxget},
    {"cuCtxSetCurrent", (void *)s_ctxset}, {"cuCtxPushCurrent", (void *)s_push}, {"cuCtxPopCurrent", (void *)s_pop},
    {"cuCtxGetDevice", (void *)s_ctxdev}, {"cuDevicePrimaryCtxRetain", (void *)s_retain},
    {"cuDevicePrimaryCtxRelease", (void *)s_release}, {"cuStreamGetCtx", (void *)s_streamctx},
    {"cuGetErrorName", (void *)s_errname}, {"cuGetErrorString", (void *)s_errstr},
    {"cuLibraryLoadData", (void *)s_libload}, {"cuLibraryUnload", (void *)s_libunload},
    {"cuLibraryGetKernel", (void *)s_getkernel}, {"cuLibraryGetKernelCount", (void *)s_kcount},
    {"cuLibraryEnumerateKernels", (void *)s_kenum}, {"cuLibraryGetGlobal", (void *)s_global},
    {"cuLibraryGetManaged", (void *)s_managed}, {"cuLibraryGetModule", (void *)s_module},
    {"cuLibraryGetUnifiedFunction", (void *)s_unified}, {"cuKernelGetName", (void *)s_kname},
    {"cuKernelGetParamInfo", (void *)s_param}, {"cuKernelGetFunction", (void *)s_kfunc},
    {"cuKernelGetAttribute", (void *)s_kattr}, {"cuKernelGetLibrary", (void *)s_klib},
    {"cuKernelSetCacheConfig", (void *)s_cache}, {"cuLaunchKernelEx", (void *)s_launch},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", (void *)s_occ_blocks},
    {"cuOccupancyMaxPotentialBlockSizeWithFlags", (void *)s_occ_size},
    {"cuOccupancyAvailableDynamicSMemPerBlock", (void *)s_occ_smem},
    {"cuOccupancyMaxPotentialClusterSize", (void *)s_occ_cluster},
    {"cuOccupancyMaxActiveClusters", (void *)s_occ_clusters}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(sym, t[i].n)) { *pfn = t[i].f; if (st) *st = 0; return 0; }
  *pfn = 0; if (st) *st = 1; return 500;
}
CUresult cuInit(unsigned f) { return s_init(f); }

/* ---- the runtime: the same library, the same state ---- */
typedef int cudaError_t;
typedef struct { unsigned x, y, z; } dim3_t;
typedef struct { dim3_t grid, block; size_t smem; void *stream; attr_t *attrs; unsigned nattrs; } rcfg_t;
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }
const char *cudaGetErrorName(cudaError_t e) { return e == 1 ? "cudaErrorInvalidValue" : e == 98 ? "cudaErrorInvalidDeviceFunction" : "cudaErrorUnknown"; }
const char *cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
cudaError_t cudaGetLastError(void) { return 0; }
cudaError_t cudaLibraryLoadData(lib_t **l, const void *c, int *jk, void **jv, unsigned nj, int *lk, void **lv, unsigned nl) {
  return s_libload(l, c, jk, jv, nj, lk, lv, nl);
}
cudaError_t cudaLibraryUnload(lib_t *l) { return s_libunload(l) ? 400 : 0; }
cudaError_t cudaLibraryGetKernel(kern_t **k, lib_t *l, const char *n) { CUresult r = s_getkernel(k, l, n); return r == 500 ? 98 : r; }
cudaError_t cudaLibraryGetKernelCount(unsigned *n, lib_t *l) { return s_kcount(n, l); }
cudaError_t cudaLibraryEnumerateKernels(kern_t **ks, unsigned n, lib_t *l) { return s_kenum(ks, n, l); }
cudaError_t cudaLibraryGetManaged(void **p, size_t *n, lib_t *l, const char *name) {
  if (l != &lib || strcmp(name, "m")) return 1;
  *p = &managed_var; if (n) *n = sizeof(int);
  return 0;
}
/* A name the library lacks: cudaErrorInvalidValue, as the real runtime answers. */
cudaError_t cudaLibraryGetUnifiedFunction(void **p, lib_t *l, const char *name) {
  if (l != &lib || strcmp(name, "u")) return 1;
  *p = &unified_fn;
  return 0;
}
cudaError_t cudaLaunchKernelExC(const rcfg_t *cfg, kern_t *f, void **p) {
  (void)p;
  if (f != &kern) return 400;
  last_api = 0; last_ctx = 0; launches++;
  record_attrs(cfg->attrs, cfg->nattrs);
  write_nodes(cfg->attrs, cfg->nattrs);
  return 0;
}
cudaError_t cudaLaunchKernel(kern_t *f, dim3_t g, dim3_t b, void **p, size_t smem, void *s) {
  (void)g; (void)b; (void)p; (void)smem; (void)s;
  if (f != &kern) return 400;
  last_api = 0; last_ctx = 0; launches++;
  last_nattr = 0;
  return 0;
}
/* A __global__ function's host stub this runtime knows: standin_kernel_stub. */
void standin_kernel_stub(void) {}
cudaError_t cudaGetKernel(kern_t **k, const void *entry) {
  if (entry != (const void *)standin_kernel_stub) return 98;
  *k = &kern;
  return 0;
}

/* ---- the tests' window ---- */
long standin_call(const char *what, long arg) {
#define IS(s) (!strcmp(what, s))
  if (IS("depth")) return depth;
  if (IS("top")) return (long)(intptr_t)cur();
  if (IS("primary")) return (long)(intptr_t)&primary[arg];
  if (IS("user")) return (long)(intptr_t)&user[arg];
  if (IS("retains")) return retains[arg];
  if (IS("retain_calls")) return retain_calls[arg];
  if (IS("lax")) { lax = (int)arg; return 0; }
  if (IS("param_calls")) return param_calls;
  if (IS("push_user")) return s_push(&user[arg]);
  if (IS("pop")) return s_pop(0);
  if (IS("stream")) return (long)(intptr_t)&streams[arg];
  if (IS("global")) return (long)(intptr_t)&globals[arg];
  if (IS("module")) return (long)(intptr_t)&modules[arg];
  if (IS("unified")) return (long)(intptr_t)&unified_fn;
  if (IS("kernel")) return (long)(intptr_t)&kern;
  if (IS("library")) return (long)(intptr_t)&lib;
  if (IS("stub")) return (long)(intptr_t)standin_kernel_stub;
  if (IS("loads")) return loads;
  if (IS("launches")) return launches;
  if (IS("last_api")) return last_api;
  if (IS("last_ctx")) return (long)(intptr_t)last_ctx;
  if (IS("query_ctx")) return (long)(intptr_t)query_ctx;
  if (IS("occ_ctx")) return (long)(intptr_t)occ_ctx;
  if (IS("nattr")) return last_nattr;
  if (IS("attr_id")) return last_attrs[arg].id;
  if (IS("attr_word")) return last_attrs[arg].v.word;
  if (IS("attr_word2")) { long w; memcpy(&w, last_attrs[arg].v.bytes + 8, sizeof w); return w; }
  if (IS("jit_n")) return jit_n;
  if (IS("jit_key")) return jit_keys[arg];
  if (IS("jit_value")) return jit_vals[arg];
  if (IS("lib_n")) return lib_n;
  if (IS("lib_key")) return lib_keys[arg];
  if (IS("lib_value")) return lib_vals[arg];
  if (IS("occ_flags")) return occ_flags;
  if (IS("occ_smem")) return occ_smem;
  if (IS("occ_callbacks")) return occ_callbacks;
  if (IS("occ_block")) return occ_block;
  if (IS("occ_nattr")) return occ_nattr;
  if (IS("cache_config")) return cache_cfg;
  if (IS("cache_device")) return cache_dev;
  return -999999;
#undef IS
}
