// A read-only memory mapping of a file (POSIX mmap): how the CLI and servers hand a .tern file
// to Model::Load without copying it. Page-aligned, so tensor data is 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"

namespace tern::posix {

class MappedFile {
 public:
  static Result<MappedFile> Open(const char* path);
  // The same bytes read into a 64-byte aligned heap buffer instead of mapped: the model then no
  // longer depends on the file staying unchanged (a mapped file must not be rewritten in place).
  static Result<MappedFile> Read(const char* path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool mapped() const { return data_ != nullptr && !heap_; }

  // A Model::ConsumedHook for a model on a mapping (Open, not Read): drops the whole pages
  // inside [data, data + bytes) from this process (madvise MADV_DONTNEED). The mapping is
  // private and never written, so a later read loads them from the file again, one page at a
  // time (MADV_RANDOM on the same range: a tied embedding's rows are read a few at a time, and
  // readahead around each would bring megabytes of packed weights back). `user` unused.
  static void DropPages(void* user, const void* data, size_t bytes);

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool heap_ = false;  // Read: free(), not munmap()
};

}  // namespace tern::posix
