// Fuzz target: the restricted unpickler alone, on raw pickle bytes (the data.pkl of a
// torch.save archive without the zip around it, so mutations reach the opcodes directly).
#include <cstddef>
#include <cstdint>
#include <exception>

#include "converter/error.h"
#include "converter/readers/pickle.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto value = tern::convert::Unpickle(data, size, "fuzz.pkl");
    if (!value) tern::fuzz::Die("Unpickle returned null");
  } catch (const tern::convert::Error& e) {
    tern::fuzz::Refused(e.what());
  } catch (const std::exception& e) {
    tern::fuzz::Die("Unpickle threw something other than convert::Error", e.what());
  }
  return 0;
}
