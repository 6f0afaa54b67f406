// Fuzz target: the safetensors reader. SafetensorsFile::Parse (header JSON, dtypes, shapes,
// offsets, overlaps), reading every tensor back (Float / Ints), and the Checkpoint built over it
// (ReadSafetensorsCheckpoint), whose views are re-checked independently.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "converter/error.h"
#include "converter/readers/checkpoint.h"
#include "converter/readers/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
constexpr int64_t kMaxElements = int64_t{1} << 22;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tern::fuzz::Die;
  try {
    const auto file =
        tern::convert::SafetensorsFile::Parse(std::vector<uint8_t>(data, data + size), "fuzz");
    for (const auto& kv : file.entries()) {
      const auto& e = kv.second;
      int64_t n = 1;
      for (int64_t d : e.shape) n *= d;  // Parse bounds the product by 2^40
      if (n > kMaxElements) continue;
      try {
        if (e.dtype == "I32" || e.dtype == "I64") {
          if (static_cast<int64_t>(file.Ints(kv.first).size()) != n)
            Die("Ints: wrong element count", kv.first);
        }
        const auto t = file.Float(kv.first, /*allow_int=*/true);
        if (static_cast<int64_t>(t.values.size()) != n) Die("Float: wrong element count", kv.first);
      } catch (const tern::convert::Error& e) {
        tern::fuzz::Refused(e.what());
      }
    }
  } catch (const tern::convert::Error& e) {
    tern::fuzz::Refused(e.what());
  } catch (const std::exception& e) {
    Die("SafetensorsFile::Parse threw something other than convert::Error", e.what());
  }

  static tern::fuzz::MemFile mem;
  const std::string path = mem.Write(data, size);
  try {
    const auto ckpt = tern::convert::ReadSafetensorsCheckpoint(path);
    tern::fuzz::CheckAndReadCheckpoint(ckpt, size, kMaxElements);
  } catch (const tern::convert::Error& e) {
    tern::fuzz::Refused(e.what());
  } catch (const std::exception& e) {
    Die("ReadSafetensorsCheckpoint threw something other than convert::Error", e.what());
  }
  return 0;
}
