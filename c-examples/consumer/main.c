#include <stdio.h>
#include <string.h>
#include "cudyn.h"

int main(void) {
  cudyn_version_info v;
  if (cudyn_versions(&v) != CUDYN_SUCCESS) return 1;
  /* An invalid call must fail cleanly with a message. */
  cudyn_kernel_t k;
  if (cudyn_library_get_kernel(NULL, "k", CUDYN_API_DRIVER, &k) != CUDYN_ERROR_INVALID_ARGUMENT) return 2;
  if (strlen(cudyn_last_error_message()) == 0) return 3;
  printf("consumer OK: cudyn %d, driver %d, runtime %d\n", v.cudyn, v.driver, v.runtime);
  return v.cudyn > 0 ? 0 : 4;
}
