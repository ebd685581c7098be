/* The program every outside consumer project builds: it only needs cudyn to link and to answer,
 * so it runs on a machine without a GPU. CONSUMER_HOW says how the project found cudyn. */
#include <stdio.h>
#include <string.h>

#include <cudyn.h>

#ifndef CONSUMER_HOW
#define CONSUMER_HOW "consumer"
#endif

int main(void) {
  cudyn_version_info v;
  if (cudyn_versions(&v) != CUDYN_SUCCESS) return 1;
  /* An invalid call fails cleanly, with a message. */
  cudyn_kernel_t k;
  if (cudyn_library_get_kernel(NULL, "k", CUDYN_API_RUNTIME, &k) != CUDYN_ERROR_INVALID_ARGUMENT) return 2;
  if (strlen(cudyn_last_error_message()) == 0) return 3;
  printf("%s OK: %s\n", CONSUMER_HOW, cudyn_version_string());
  return v.cudyn > 0 ? 0 : 4;
}
