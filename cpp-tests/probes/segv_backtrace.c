/* LD_PRELOAD helper for GPU debugging: prints a backtrace on SIGSEGV (no gdb on the GPU host). */
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
static void on_segv(int sig) {
  void *pcs[64];
  int n = backtrace(pcs, 64);
  write(2, "SIGSEGV backtrace:\n", 19);
  backtrace_symbols_fd(pcs, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) { signal(SIGSEGV, on_segv); }
