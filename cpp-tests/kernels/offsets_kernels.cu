// A kernel for the structured campaign (scripts/campaign_corpus.sh): mbarriers, a system-scope
// atomic, printf and a device global, so that ptxas writes the .nv.info attributes that list
// instruction offsets (EXIT, MBARRIER, SYSCALL, INT_WARP_WIDE), an EXTERNS list, a callgraph
// with calls, relocations of the code and a NOBITS .nv.global for the mutants to corrupt.
#include <cstdio>
__device__ int g;
extern "C" __global__ void mb(unsigned long long *out, int n) {
  __shared__ unsigned long long bar;
  unsigned addr = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(addr), "r"(blockDim.x));
  __syncthreads();
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(state) : "r"(addr));
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(addr), "l"(state));
  if (threadIdx.x < n) {
    out[threadIdx.x] = state + g;
    atomicAdd_system((int *)out, 1);
  }
  if (n > 100) printf("n %d\n", n);
}
