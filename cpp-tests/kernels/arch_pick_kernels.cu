// Device code of interop's arch_pick case: one fatbin with plain sm_90 and sm_90a SASS whose
// kernels tell which entry CUDA loaded. `which_entry` is in both, with a different body; each
// entry also has a kernel of its own.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ENTRY_TAG 901
extern "C" __global__ void only_in_sm_90a(int *p) { *p = ENTRY_TAG; }
#else
#define ENTRY_TAG 90
extern "C" __global__ void only_in_sm_90(int *p) { *p = ENTRY_TAG; }
#endif
extern "C" __global__ void which_entry(int *p) { *p = ENTRY_TAG; }
