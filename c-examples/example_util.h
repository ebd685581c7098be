/* Small helpers shared by the examples: checking cudyn calls, and the GPU-or-skip rule.
 * Not part of cudyn's API. */
#ifndef CUDYN_EXAMPLE_UTIL_H
#define CUDYN_EXAMPLE_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cudyn.h"

/* Exit code ctest reads as "skipped". */
#define EXAMPLE_SKIP 77

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudyn_status check_s_ = (call);                                                       \
    if (check_s_ != CUDYN_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d: %s failed: %s\n  %s\n", __FILE__, __LINE__, #call,         \
              cudyn_status_string(check_s_), cudyn_last_error_message());                 \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

/* Without a usable GPU: print why and exit 77 (skip), unless CUDYN_REQUIRE_GPU=1, where a
 * missing GPU is a failure (the GPU suite sets it so nothing skips silently there). */
static inline void example_require_gpu(const char *what) {
  cudyn_status s = cudyn_component_status(CUDYN_COMPONENT_DRIVER);
  if (s == CUDYN_SUCCESS) return;
  const char *req = getenv("CUDYN_REQUIRE_GPU");
  int required = req && strcmp(req, "1") == 0;
  printf("%s: %s: %s\n", required ? "FAIL" : "SKIP", what, cudyn_last_error_message());
  exit(required ? 1 : EXAMPLE_SKIP);
}

/* Read a whole file; exits on failure. */
static inline void *example_read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n > 0 ? (size_t)n : 1);
  if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
  fclose(f);
  *size = (size_t)n;
  return p;
}

/* A small deterministic generator so runs are reproducible. */
static inline float example_rand(unsigned *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}
#endif
