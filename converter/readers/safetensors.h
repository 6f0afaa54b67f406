// Reader for the safetensors format (Hugging Face): an 8-byte little-endian header length, a
// JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then
// the raw little-endian data. Every header field is validated against the file before any
// data is touched: offsets inside the data, sizes equal to dtype x shape, no overlaps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "converter/error.h"
#include "converter/host_tensor.h"

namespace tern::convert {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets into the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file. Throws convert::Error naming the problem.
  static SafetensorsFile Read(const std::string& path);
  static SafetensorsFile Parse(std::vector<uint8_t> bytes, const std::string& label);

  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // Values widened to float32; throws for non-float dtypes unless allow_int.
  HostTensor Float(const std::string& name, bool allow_int = false) const;
  // Integer tensors (I32/I64) as int64.
  std::vector<int64_t> Ints(const std::string& name) const;
  // Start of the data section; an entry's bytes are [begin, end) from here.
  const uint8_t* data_section() const { return bytes_.data() + data_start_; }
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  std::vector<uint8_t> bytes_;
  size_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Writes float32 (and int32) tensors as safetensors; used by tools and tests.
void WriteSafetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                      const std::map<std::string, std::string>& metadata);

}  // namespace tern::convert
