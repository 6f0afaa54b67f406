#include "platforms/posix/arena_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tern::posix {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;  // x86-64's and aarch64's (4 KiB granule) size
}  // namespace

Result<ArenaMemory> ArenaMemory::Allocate(size_t bytes) {
  ArenaMemory memory;
  if (bytes == 0) return memory;
  if (bytes > SIZE_MAX - 2 * kHugePage) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot map an arena of %zu bytes", bytes);
  }
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // One huge page more than needed, then the unaligned head and the tail unmapped: mmap itself
  // only promises 4 KiB alignment, and a huge page must start on a 2 MiB boundary.
  const size_t span = rounded + kHugePage;
  void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot map an arena of %zu bytes: %s", bytes,
                         std::strerror(errno));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1);
  const size_t head = aligned - start;
  const size_t tail = span - head - rounded;
  if (head > 0) ::munmap(raw, head);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  memory.data_ = reinterpret_cast<uint8_t*>(aligned);
  memory.size_ = bytes;
  memory.mapped_ = rounded;
#if defined(MADV_HUGEPAGE)
  memory.advised_ = ::madvise(memory.data_, rounded, MADV_HUGEPAGE) == 0;
#endif
  return memory;
}

ArenaMemory::ArenaMemory(ArenaMemory&& other) noexcept { *this = std::move(other); }

ArenaMemory& ArenaMemory::operator=(ArenaMemory&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

ArenaMemory::~ArenaMemory() { Release(); }

void ArenaMemory::Release() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
  advised_ = false;
}

}  // namespace tern::posix
