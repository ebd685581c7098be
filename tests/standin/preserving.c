/* A stand-in libcuda for tests/preserved_images.rs: no GPU (one sm_90 device), a library per
 * load and nothing else, but CUDA's contract for CU_LIBRARY_BINARY_IS_PRESERVED (option 1)
 * taken literally: without it the image is copied at load, as the real driver does; with it the
 * driver keeps the caller's pointer and reads the whole image again at unload (through memcmp,
 * which AddressSanitizer intercepts: an image freed before its unload is a use-after-free it
 * reports), and the unload fails (999) when the bytes changed since the load. Each load's
 * pointer and flag are kept for the test to read (standin_last_image, standin_last_preserved). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { NL = 64 };
typedef struct { int live, preserved; const unsigned char *image; unsigned char *copy; size_t size; } lib;
static lib L[NL];
static const void *last_image;
static int last_preserved = -1;
static long bad_unloads;

const void *standin_last_image(void) { return last_image; }
int standin_last_preserved(void) { return last_preserved; }
long standin_bad_unloads(void) { return bad_unloads; }

/* The image's size as CUDA finds it: a fatbin's header, a cubin's section table, PTX's NUL. */
static size_t image_size(const unsigned char *p) {
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == 0xBA55ED50u) { uint64_t n; memcpy(&n, p + 8, 8); return 16 + n; }
  if (!memcmp(p, "\x7f" "ELF", 4)) {
    uint64_t shoff; uint16_t shnum;
    memcpy(&shoff, p + 40, 8); memcpy(&shnum, p + 60, 2);
    return shoff + 64u * shnum;
  }
  return strlen((const char *)p) + 1;
}

static CUresult s_init(unsigned f) { (void)f; return 0; }
static CUresult s_ver(int *v) { *v = 13000; return 0; }
static CUresult s_count(int *n) { *n = 1; return 0; }
static CUresult s_attr(int *v, int attr, int dev) {
  (void)dev;
  *v = attr == 75 ? 9 : attr == 76 ? 0 : 1; /* compute capability 9.0 */
  return 0;
}
static void *current;
static int primary;
static CUresult s_ctxget(void **c) { *c = current; return 0; }
static CUresult s_ctxset(void *c) { current = c; return 0; }
static CUresult s_ctxdev(int *d) { *d = 0; return 0; }
static CUresult s_retain(void **c, int d) { (void)d; *c = &primary; return 0; }
static CUresult s_errname(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_STANDIN"; return 0; }
static CUresult s_errstr(CUresult r, const char **s) { (void)r; *s = "stand-in error"; return 0; }

static CUresult s_libload(void **out, const void *code, void *jo, void *jv, unsigned nj, const unsigned *lo,
                          void **lv, unsigned nl) {
  (void)jo; (void)jv; (void)nj;
  int preserved = 0;
  for (unsigned i = 0; i < nl; i++)
    if (lo[i] == 1) preserved = lv[i] != 0;
  for (int i = 0; i < NL; i++) {
    if (L[i].live) continue;
    lib *l = &L[i];
    l->size = image_size(code);
    l->copy = malloc(l->size);
    memcpy(l->copy, code, l->size);
    l->preserved = preserved;
    l->image = preserved ? code : l->copy;
    l->live = 1;
    last_image = code;
    last_preserved = preserved;
    *out = l;
    return 0;
  }
  return 2;
}
static CUresult s_libunload(void *p) {
  lib *l = p;
  if (!l->live) return 400;
  /* Read in place, as CUDA may until this call returns. */
  if (l->preserved && memcmp(l->image, l->copy, l->size) != 0) {
    bad_unloads++;
    l->live = 0;
    free(l->copy);
    return 999;
  }
  l->live = 0;
  free(l->copy);
  return 0;
}
static CUresult s_kcount(unsigned *n, void *l) { (void)l; *n = 0; return 0; }
static CUresult s_kenum(void **k, unsigned n, void *l) { (void)k; (void)n; (void)l; return 0; }
static CUresult s_getmodule(void **m, void *l) { *m = l; return 0; }

CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, uint64_t flags, int *st) {
  (void)ver; (void)flags;
  static const struct { const char *n; void *f; } t[] = {
    {"cuInit", (void *)s_init}, {"cuDriverGetVersion", (void *)s_ver}, {"cuDeviceGetCount", (void *)s_count},
    {"cuDeviceGetAttribute", (void *)s_attr}, {"cuCtxGetCurrent", (void *)s_ctxget},
    {"cuCtxSetCurrent", (void *)s_ctxset}, {"cuCtxGetDevice", (void *)s_ctxdev},
    {"cuDevicePrimaryCtxRetain", (void *)s_retain}, {"cuGetErrorName", (void *)s_errname},
    {"cuGetErrorString", (void *)s_errstr}, {"cuLibraryLoadData", (void *)s_libload},
    {"cuLibraryUnload", (void *)s_libunload}, {"cuLibraryGetKernelCount", (void *)s_kcount},
    {"cuLibraryEnumerateKernels", (void *)s_kenum}, {"cuLibraryGetModule", (void *)s_getmodule}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(sym, t[i].n)) continue;
    *pfn = t[i].f; if (st) *st = 0; return 0;
  }
  *pfn = 0; if (st) *st = 1; return 500;
}
