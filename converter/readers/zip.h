// A reader for the zip archives torch.save and numpy.savez write: entries must be stored
// (method 0), unencrypted, on one disk. Zip64 records (numpy writes them; torch for files over
// 4 GiB) are understood. Everything is checked against the file before use: the central
// directory, each local header (its name must match), each entry's data range, and the CRC-32 of
// every entry that is read. Compressed entries (np.savez_compressed) are rejected with a clear
// error: zlib is not available to the converter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "converter/readers/file_bytes.h"

namespace tern::convert {

struct ZipEntry {
  std::string name;
  uint64_t data_offset = 0;  // start of the stored bytes in the file
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  // Parses the central directory and every local header. Throws convert::Error naming the
  // archive (and the entry) on any inconsistency.
  static ZipArchive Open(std::shared_ptr<const FileBytes> file);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* Find(const std::string& name) const;
  // The entry's bytes, after checking its CRC-32 (once per entry).
  const uint8_t* Data(const ZipEntry& entry) const;
  const std::string& label() const { return file_->path(); }
  const std::shared_ptr<const FileBytes>& file() const { return file_; }

 private:
  std::shared_ptr<const FileBytes> file_;
  std::vector<ZipEntry> entries_;
  mutable std::vector<bool> checked_;
};

// True when the bytes start like a zip archive (a local file header).
bool LooksLikeZip(const uint8_t* data, size_t size);

uint32_t Crc32(const uint8_t* data, size_t size);

}  // namespace tern::convert
