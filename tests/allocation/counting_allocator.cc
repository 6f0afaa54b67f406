#include "tests/allocation/counting_allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

// Under AddressSanitizer the sanitizer owns malloc and operator new: interposing them here
// would hand it glibc blocks it never made (the binary crashes before main). There the counter
// uses the sanitizer's allocation hook instead, which sees every malloc / calloc / realloc /
// memalign / operator new that goes through ASan's allocator.
#if defined(__SANITIZE_ADDRESS__)
#define TERN_COUNT_WITH_SANITIZER_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TERN_COUNT_WITH_SANITIZER_HOOK 1
#endif
#endif

#if !defined(TERN_COUNT_WITH_SANITIZER_HOOK)
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);
}
#endif

namespace {

std::atomic<bool> g_counting{false};
std::atomic<size_t> g_count{0};

inline void Note() {
  if (g_counting.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

namespace tern::testing {

void StartCountingAllocations() {
  g_count = 0;
  g_counting = true;
}

size_t StopCountingAllocations() {
  g_counting = false;
  return g_count.load();
}

}  // namespace tern::testing

#if defined(TERN_COUNT_WITH_SANITIZER_HOOK)

extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {

void MallocHook(const volatile void*, size_t) { Note(); }
void FreeHook(const volatile void*) {}
[[maybe_unused]] const int g_hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(MallocHook, FreeHook);

}  // namespace

#else  // interpose the allocation functions

extern "C" {

void* malloc(size_t size) {
  Note();
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  Note();
  return __libc_calloc(count, size);
}

void* realloc(void* p, size_t size) {
  Note();
  return __libc_realloc(p, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  Note();
  return __libc_memalign(alignment, size);
}

void* memalign(size_t alignment, size_t size) {
  Note();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  Note();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}

void free(void* p) { __libc_free(p); }

}  // extern "C"

void* operator new(size_t size) {
  Note();
  void* p = __libc_malloc(size ? size : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  Note();
  return __libc_malloc(size ? size : 1);
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  Note();
  return __libc_malloc(size ? size : 1);
}
void* operator new(size_t size, std::align_val_t alignment) {
  Note();
  void* p = __libc_memalign(static_cast<size_t>(alignment), size ? size : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }

#endif  // TERN_COUNT_WITH_SANITIZER_HOOK
