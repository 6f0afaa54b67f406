// Fuzz target: the numpy reader. Inputs starting with the zip signature go through ReadNpz (zip
// + one .npy header per entry + the array views); anything else is one .npy array given to
// ParseNpyHeader directly, so mutations reach the header parser without a zip around it.
#include <cstddef>
#include <cstdint>
#include <exception>

#include "converter/error.h"
#include "converter/readers/checkpoint.h"
#include "converter/readers/zip.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tern::fuzz::Die;
  if (!tern::convert::LooksLikeZip(data, size)) {
    try {
      tern::convert::CheckpointTensor t;
      const size_t header = tern::convert::ParseNpyHeader(data, size, "fuzz.npy", &t);
      if (header > size) Die("the .npy data starts past the input");
      if (t.shape.size() != t.strides.size()) Die("shape and strides differ in rank");
    } catch (const tern::convert::Error& e) {
      tern::fuzz::Refused(e.what());
    } catch (const std::exception& e) {
      Die("ParseNpyHeader threw something other than convert::Error", e.what());
    }
    return 0;
  }
  static tern::fuzz::MemFile mem;
  const std::string path = mem.Write(data, size);
  try {
    const auto ckpt = tern::convert::ReadNpz(path);
    tern::fuzz::CheckAndReadCheckpoint(ckpt, size, int64_t{1} << 22);
  } catch (const tern::convert::Error& e) {
    tern::fuzz::Refused(e.what());
  } catch (const std::exception& e) {
    Die("ReadNpz threw something other than convert::Error", e.what());
  }
  return 0;
}
