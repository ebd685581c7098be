/* Counts host instructions per call against a stand-in libcuda. Modes: 0 the stand-in launch
 * called directly, 1 cudyn_launch (driver), 2 cudyn_launch_checked (a foreign kernel: its
 * layout is asked of the driver on every launch), 5 and 6 the same with the kernel adopted
 * (the fast path: layout remembered), 7 mode 5 with a named launch attribute (cooperative),
 * 8 mode 5 with two attributes in the config's list (priority 0, a memory sync domain), 3 the stand-in
 * cuLibraryLoadData + cuLibraryUnload called directly, 4 cudyn_library_load_data (driver) +
 * cudyn_library_unload of the image file given as the third argument. Run by run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include "cudyn.h"
typedef int (*launch_fn)(const void *, void *, void **, void **);
typedef int (*load_fn)(void **, const void *, void *, void *, unsigned, void *, void *, unsigned);
typedef int (*unload_fn)(void *);
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000000;
  int mode = argc > 2 ? atoi(argv[2]) : 0;
  void *h = dlopen("libcuda.so.1", RTLD_NOW);
  launch_fn raw = (launch_fn)dlsym(h, "s_launch");
  load_fn raw_load = (load_fn)dlsym(h, "s_libload");
  unload_fn raw_unload = (unload_fn)dlsym(h, "s_libunload");
  if (mode == 3 || mode == 4) {
    if (argc < 4) { printf("modes 3 and 4 need an image file\n"); return 1; }
    FILE *f = fopen(argv[3], "rb");
    if (!f) { printf("cannot open %s\n", argv[3]); return 1; }
    static char image[1 << 24];
    size_t size = fread(image, 1, sizeof image, f);
    fclose(f);
    for (int i = 0; i < n; i++) {
      if (mode == 3) {
        void *l;
        raw_load(&l, image, 0, 0, 0, 0, 0, 0);
        raw_unload(l);
      } else {
        cudyn_library_t l;
        if (cudyn_library_load_data(image, size, CUDYN_API_DRIVER, &l) != CUDYN_SUCCESS) {
          printf("%s\n", cudyn_last_error_message());
          return 1;
        }
        cudyn_library_unload(l, CUDYN_API_DRIVER);
      }
    }
    return 0;
  }
  cudyn_kernel_t k = (cudyn_kernel_t)0x5000;
  long a = 1, b = 2;
  void *args[] = {&a, &b};
  size_t sizes[] = {8, 8};
  cudyn_launch_config cfg = {0};
  cfg.grid.x = cfg.grid.y = cfg.grid.z = 1; cfg.block.x = 32; cfg.block.y = cfg.block.z = 1;
  cfg.api = CUDYN_API_DRIVER;
  cudyn_launch_attribute list[2];
  memset(list, 0, sizeof list);
  list[0].id = CUDYN_LAUNCH_ATTRIBUTE_PRIORITY;
  list[0].value.priority = 0;
  list[1].id = CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
  list[1].value.mem_sync_domain = CUDYN_MEM_SYNC_DOMAIN_DEFAULT;
  if (mode == 7) cfg.cooperative = 1;
  if (mode == 8) {
    cfg.attributes.attrs = list;
    cfg.attributes.count = 2;
  }
  if (mode >= 5 && cudyn_kernel_adopt(k) != CUDYN_SUCCESS) { printf("%s\n", cudyn_last_error_message()); return 1; }
  if (cudyn_launch(k, &cfg, args, 2) != 0) { printf("%s\n", cudyn_last_error_message()); return 1; }
  char c[56] = {0};
  for (int i = 0; i < n; i++) {
    if (mode == 0) raw(c, k, args, 0);
    else if (mode == 1 || mode >= 5 && mode != 6) cudyn_launch(k, &cfg, args, 2);
    else cudyn_launch_checked(k, &cfg, args, sizes, 2);
  }
  return 0;
}
