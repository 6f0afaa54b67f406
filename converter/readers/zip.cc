#include "converter/readers/zip.h"

#include <algorithm>
#include <cstring>

#include "converter/error.h"

namespace tern::convert {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kMaxEntries = 1u << 20;

uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t U32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t U64(const uint8_t* p) {
  return static_cast<uint64_t>(U32(p)) | (static_cast<uint64_t>(U32(p + 4)) << 32);
}

}  // namespace

uint32_t Crc32(const uint8_t* data, size_t size) {
  static uint32_t table[256];
  static bool ready = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)ready;
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

bool LooksLikeZip(const uint8_t* data, size_t size) {
  return size >= 4 && U32(data) == kLocalHeader;
}

ZipArchive ZipArchive::Open(std::shared_ptr<const FileBytes> file) {
  ZipArchive zip;
  zip.file_ = file;
  const std::string& label = file->path();
  const uint8_t* b = file->data();
  const uint64_t size = file->size();
  auto fail = [&](const std::string& what) {
    throw Error(label + ": corrupted zip archive: " + what);
  };
  if (size < 22)
    fail("too small (" + std::to_string(size) + " bytes) for an end-of-central-directory record");

  // End of central directory: the last 22 bytes plus a comment of up to 65535 bytes.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  for (uint64_t p = size - 22 + 1; p-- > lowest;) {
    if (U32(b + p) == kEndOfCentralDirectory && p + 22 + U16(b + p + 20) == size) {
      eocd = p;
      break;
    }
  }
  if (eocd == UINT64_MAX) fail("no end-of-central-directory record (truncated file?)");
  if (U16(b + eocd + 4) != 0 || (U16(b + eocd + 6) != 0 && U16(b + eocd + 6) != 0xFFFF)) {
    fail("multi-disk archives are not supported");
  }
  uint64_t count = U16(b + eocd + 10);
  uint64_t cd_size = U32(b + eocd + 12);
  uint64_t cd_offset = U32(b + eocd + 16);
  uint64_t cd_limit = eocd;  // the central directory ends before this
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) {
    if (eocd < 20 || U32(b + eocd - 20) != kZip64Locator)
      fail("zip64 fields without a zip64 locator");
    const uint64_t z = U64(b + eocd - 20 + 8);
    if (z > eocd - 20 || eocd - 20 - z < 56 || U32(b + z) != kZip64EndOfCentralDirectory) {
      fail("zip64 end-of-central-directory record is missing or out of place");
    }
    if (U32(b + z + 16) != 0 || U32(b + z + 20) != 0) fail("multi-disk archives are not supported");
    count = U64(b + z + 32);
    cd_size = U64(b + z + 40);
    cd_offset = U64(b + z + 48);
    cd_limit = z;
  }
  if (count > kMaxEntries)
    fail(std::to_string(count) + " entries is more than this reader accepts");
  if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset) {
    fail("central directory [" + std::to_string(cd_offset) + ", +" + std::to_string(cd_size) +
         ") lies outside the file (truncated file?)");
  }

  uint64_t p = cd_offset;
  const uint64_t cd_end = cd_offset + cd_size;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_end - p < 46 || U32(b + p) != kCentralHeader) {
      fail("central directory entry " + std::to_string(i) + " is damaged");
    }
    const uint16_t flags = U16(b + p + 8);
    const uint16_t method = U16(b + p + 10);
    ZipEntry e;
    e.crc32 = U32(b + p + 16);
    uint64_t compressed = U32(b + p + 20);
    uint64_t uncompressed = U32(b + p + 24);
    const uint16_t name_len = U16(b + p + 28);
    const uint16_t extra_len = U16(b + p + 30);
    const uint16_t comment_len = U16(b + p + 32);
    const uint16_t disk = U16(b + p + 34);
    uint64_t local = U32(b + p + 42);
    if (cd_end - p - 46 < static_cast<uint64_t>(name_len) + extra_len + comment_len) {
      fail("central directory entry " + std::to_string(i) + " runs past the directory");
    }
    e.name.assign(reinterpret_cast<const char*>(b + p + 46), name_len);
    const std::string where = "entry \"" + e.name + "\"";
    if (flags & 0x1) throw Error(label + ": zip " + where + " is encrypted; not supported");
    if (method != 0) {
      throw Error(label + ": zip " + where + " is compressed (method " + std::to_string(method) +
                  (method == 8 ? ", deflate" : "") +
                  "); only stored entries are supported (torch.save and numpy.savez store; "
                  "numpy.savez_compressed does not: re-save with numpy.savez)");
    }
    // Zip64 extended information: 64-bit values for the fields that hold 0xFFFFFFFF, in order.
    const uint8_t* x = b + p + 46 + name_len;
    const uint8_t* x_end = x + extra_len;
    while (x_end - x >= 4) {
      const uint16_t id = U16(x);
      const uint16_t len = U16(x + 2);
      if (x_end - x - 4 < len) fail(where + " has a damaged extra field");
      if (id == 0x0001) {
        const uint8_t* v = x + 4;
        uint16_t left = len;
        auto take = [&](uint64_t* field) {
          if (*field != 0xFFFFFFFFu) return;
          if (left < 8) fail(where + " has a short zip64 extra field");
          *field = U64(v);
          v += 8;
          left = static_cast<uint16_t>(left - 8);
        };
        take(&uncompressed);
        take(&compressed);
        take(&local);
      }
      x += 4 + len;
    }
    if (disk != 0 && disk != 0xFFFF) fail(where + " lives on another disk");
    if (compressed != uncompressed) fail(where + " is stored but its sizes differ");
    if (compressed == 0xFFFFFFFFu || local == 0xFFFFFFFFu)
      fail(where + " needs zip64 fields it lacks");
    // Local header: its own name and extra field lengths decide where the data starts.
    if (local > cd_offset || cd_offset - local < 30 || U32(b + local) != kLocalHeader) {
      fail(where + ": local header at offset " + std::to_string(local) + " is missing");
    }
    const uint16_t local_name_len = U16(b + local + 26);
    const uint16_t local_extra_len = U16(b + local + 28);
    if (U16(b + local + 6) & 0x1)
      throw Error(label + ": zip " + where + " is encrypted; not supported");
    if (U16(b + local + 8) != 0)
      fail(where + ": local header says compressed, directory says stored");
    const uint64_t data = local + 30 + local_name_len + local_extra_len;
    if (local_name_len != name_len || data > cd_offset ||
        std::memcmp(b + local + 30, e.name.data(), name_len) != 0) {
      fail(where + ": local header does not match the central directory");
    }
    if (uncompressed > cd_offset - data) {
      fail(where + " data [" + std::to_string(data) + ", +" + std::to_string(uncompressed) +
           ") runs into the central directory (truncated file?)");
    }
    e.data_offset = data;
    e.size = uncompressed;
    ranges.emplace_back(local, data + uncompressed);
    zip.entries_.push_back(std::move(e));
    p += 46 + static_cast<uint64_t>(name_len) + extra_len + comment_len;
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) fail("entries overlap");
  }
  std::vector<std::string> names;
  for (const auto& e : zip.entries_) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  for (size_t i = 1; i < names.size(); ++i) {
    if (names[i] == names[i - 1]) fail("duplicate entry \"" + names[i] + "\"");
  }
  zip.checked_.assign(zip.entries_.size(), false);
  return zip;
}

const ZipEntry* ZipArchive::Find(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const uint8_t* ZipArchive::Data(const ZipEntry& entry) const {
  const uint8_t* data = file_->data() + entry.data_offset;
  const size_t index = static_cast<size_t>(&entry - entries_.data());
  if (index < checked_.size() && !checked_[index]) {
    const uint32_t crc = Crc32(data, static_cast<size_t>(entry.size));
    if (crc != entry.crc32) {
      throw Error(label() + ": corrupted zip archive: entry \"" + entry.name +
                  "\" fails its CRC-32 check");
    }
    checked_[index] = true;
  }
  return data;
}

}  // namespace tern::convert
