// The kernel bundle_app compiles at run time; cudyn_add_kernel_bundle() compiled it at build
// time for sm_80 and sm_90, so that the program's first run finds it in its bundle.
#include "bundle_values.h"
extern "C" __global__ void bundled(int* out) { out[threadIdx.x] = BUNDLE_VALUE + threadIdx.x; }
