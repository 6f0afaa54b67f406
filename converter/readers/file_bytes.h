// A whole input file, read-only, mapped into memory (mmap; a checkpoint can be gigabytes and
// is read once). Readers keep a shared_ptr to it while tensors point into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tern::convert {

class FileBytes {
 public:
  // Throws convert::Error "<path>: cannot open (<strerror>)" (or map) on failure, and for
  // anything but a regular file (a fifo is refused at once, never waited on).
  static std::shared_ptr<const FileBytes> Open(const std::string& path);
  // Wraps bytes already in memory (tests, nested archives).
  static std::shared_ptr<const FileBytes> FromMemory(std::string bytes, const std::string& label);

  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  FileBytes() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string owned_;
  std::string path_;
};

}  // namespace tern::convert
