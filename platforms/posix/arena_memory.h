// Memory for a session's arena (or for shared packed weights) as the CLI allocates it: anonymous
// pages from mmap, 2 MiB aligned and advised as transparent huge pages (MADV_HUGEPAGE) where the
// kernel offers them (Linux with THP "always" or "madvise"; elsewhere ordinary pages).
//
// Why: a decode step streams the packed weights in the arena once. With 4 KiB pages that is a
// TLB miss every 4 KiB, and in a virtual machine each miss walks two page tables. Measured on
// LLaMA 3.2 1B's shape (int8, a 1.2 GB arena, one thread, an AVX-512 VM): decode took 47-130 ms
// per token from a std::vector arena, run to run, and 42-43 ms with huge pages; int4 per row
// 31-61 ms and 23-30 ms (docs/benchmarks.md). The pages also come zero-filled from the kernel,
// so there is no memset pass over the arena before Prepare.
//
// The runtime does not need this (the caller owns the arena; any 64-byte aligned memory works):
// it is how tern's own tools allocate, and a recipe for applications on Linux.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace tern::posix {

class ArenaMemory {
 public:
  // At least `bytes` bytes (rounded up to whole 2 MiB), zero-filled. kOutOfMemory when the
  // mapping fails; bytes == 0 gives an empty object (data() null).
  static Result<ArenaMemory> Allocate(size_t bytes);
  ArenaMemory() = default;
  ArenaMemory(ArenaMemory&& other) noexcept;
  ArenaMemory(const ArenaMemory&) = delete;
  ArenaMemory& operator=(const ArenaMemory&) = delete;
  ArenaMemory& operator=(ArenaMemory&& other) noexcept;
  ~ArenaMemory();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }  // the bytes asked for
  // Whether the kernel accepted the huge-page advice (it may still back some pages with small
  // ones, e.g. when memory is fragmented).
  bool huge_pages_advised() const { return advised_; }

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
  bool advised_ = false;
};

}  // namespace tern::posix
