// Helpers shared by the fuzz targets (tests/fuzz/*_fuzzer.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "converter/readers/checkpoint.h"

namespace tern::fuzz {

// Prints the message and aborts: libFuzzer records the input as a crash. Used for broken
// invariants that did not crash by themselves (an exception of the wrong type, a view that
// reaches outside its storage, two validators that disagree).
[[noreturn]] void Die(const char* what, const std::string& detail = "");

// TERN_FUZZ_VERBOSE=1: print each refusal (status or convert::Error message) to stderr, to see
// why a reproducer or a seed is refused.
void Refused(const char* message);

// An in-memory file (memfd) for readers that only take a path (ReadTorchZip, ReadNpz,
// ReadSafetensorsCheckpoint): Write() replaces its contents and returns "/proc/self/fd/N".
class MemFile {
 public:
  MemFile();
  ~MemFile();
  std::string Write(const uint8_t* data, size_t size);

 private:
  int fd_ = -1;
};

// Checks every tensor view of a checkpoint independently of the reader (overflow-checked
// arithmetic): the highest element a view reaches lies inside its storage, and the storage
// (storage_elements x element size) fits in the input file. Dies on a violation. Then reads
// every tensor whose element count is at most max_elements (Float for float dtypes, Ints for
// integer ones), which is what the converter does next.
void CheckAndReadCheckpoint(const convert::Checkpoint& checkpoint, size_t file_size,
                            int64_t max_elements);

// Copy of the input at a 64-byte aligned address (model bytes must be aligned). The buffer is
// exactly `size` bytes long as ASan sees it, so a read past the end is reported.
class AlignedCopy {
 public:
  AlignedCopy(const uint8_t* data, size_t size);
  ~AlignedCopy();
  AlignedCopy(const AlignedCopy&) = delete;
  AlignedCopy& operator=(const AlignedCopy&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole file (seeds, tokenizer fixtures). Dies when it cannot.
std::vector<uint8_t> ReadFileOrDie(const std::string& path);

}  // namespace tern::fuzz
