/* A stand-in libcuda for counting the host instructions cudyn adds to a launch (callgrind):
 * every entry point cudyn resolves for a launch or a library load, doing nothing. Not CUDA; not a test. */
#include <string.h>
#include <stdint.h>
#include <stddef.h>
typedef int CUresult;
static CUresult s_init(unsigned f) { (void)f; return 0; }
static CUresult s_ver(int *v) { *v = 13000; return 0; }
static CUresult s_count(int *n) { *n = 1; return 0; }
static CUresult s_attr(int *v, int a, int d) { (void)d; *v = a == 75 ? 9 : 0; return 0; }
static int ctx_obj;
static CUresult s_ctx(void **c) { *c = &ctx_obj; return 0; }
static CUresult s_ctxdev(int *d) { *d = 0; return 0; }
static CUresult s_param(void *k, size_t i, size_t *off, size_t *sz) { (void)k; if (i >= 2) return 1; *off = i * 8; *sz = 8; return 0; }
static CUresult s_klib(void **l, void *k) { (void)k; *l = (void *)0x1234; return 0; }
volatile long launches;
CUresult s_launch(const void *cfg, void *f, void **p, void **e) { (void)cfg; (void)f; (void)p; (void)e; launches++; return 0; }
static int lib_obj;
CUresult s_libload(void **l, const void *code, void *a, void *b, unsigned n, void *c, void *d, unsigned m) {
  (void)code; (void)a; (void)b; (void)n; (void)c; (void)d; (void)m; *l = &lib_obj; return 0;
}
CUresult s_libunload(void *l) { (void)l; return 0; }
/* A library of no kernels, for a cudyn that lists a library's kernels when it loads it. */
static CUresult s_kcount(unsigned *n, void *l) { (void)l; *n = 0; return 0; }
static CUresult s_kenum(void **ks, unsigned n, void *l) { (void)ks; (void)n; (void)l; return 0; }
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuCtxGetCurrent", (void *)s_ctx}, {"cuCtxGetDevice", (void *)s_ctxdev},
    {"cuKernelGetParamInfo", (void *)s_param}, {"cuKernelGetLibrary", (void *)s_klib}, {"cuLaunchKernelEx", (void *)s_launch},
    {"cuLibraryLoadData", (void *)s_libload}, {"cuLibraryUnload", (void *)s_libunload},
    {"cuLibraryGetKernelCount", (void *)s_kcount}, {"cuLibraryEnumerateKernels", (void *)s_kenum}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) if (!strcmp(sym, t[i].n)) { *pfn = t[i].f; if (st) *st = 0; return 0; }
  *pfn = 0; if (st) *st = 1; return 500;
}
