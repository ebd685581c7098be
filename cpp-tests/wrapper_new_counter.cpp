// Part of wrapper_gpu: replaces the global operator new (in host code; nvcc would compile a
// replacement in a .cu for the device too) and counts its calls.
#include <atomic>
#include <cstdlib>
#include <new>

static std::atomic<unsigned long> news{0};

unsigned long wrapper_new_count();
unsigned long wrapper_new_count() { return news.load(); }

void* operator new(std::size_t n) {
  news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
