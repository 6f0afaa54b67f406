// Fuzz target: the zip reader alone (central directory, zip64 records, local headers, entry
// ranges, CRC-32), on bytes held in memory so that ASan sees the exact end of the archive.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "converter/error.h"
#include "converter/readers/file_bytes.h"
#include "converter/readers/zip.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tern::fuzz::Die;
  try {
    auto file = tern::convert::FileBytes::FromMemory(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.zip");
    (void)tern::convert::LooksLikeZip(file->data(), file->size());
    const auto zip = tern::convert::ZipArchive::Open(file);
    for (const auto& e : zip.entries()) {
      if (e.data_offset > size || e.size > size - e.data_offset)
        Die("an entry lies outside the archive", e.name);
      if (zip.Find(e.name) == nullptr) Die("Find does not find a listed entry", e.name);
      try {
        const uint8_t* p = zip.Data(e);
        if (p != file->data() + e.data_offset) Die("Data points elsewhere", e.name);
      } catch (const tern::convert::Error& e) {
        tern::fuzz::Refused(e.what());
      }
    }
  } catch (const tern::convert::Error& e) {
    tern::fuzz::Refused(e.what());
  } catch (const std::exception& e) {
    Die("ZipArchive threw something other than convert::Error", e.what());
  }
  return 0;
}
