// SHA-256 (FIPS 180-4), for the source-checkpoint digest recorded in a .tern file's metadata.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tern::convert {

class Sha256 {
 public:
  Sha256();
  void Update(const void* data, size_t size);
  std::string HexDigest();  // finalizes

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0;
};

std::string Sha256File(const std::string& path);

}  // namespace tern::convert
