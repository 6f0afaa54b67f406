// Fuzz target: the PyTorch reader. A torch.save zip archive goes through ReadTorchZip: the zip
// reader, the restricted unpickler (nothing is ever imported or called), the storage lookup and
// the tensor views (sizes, strides, offsets) that Checkpoint::Add checks. The views are then
// re-checked independently and every tensor is read as the converter would.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "converter/error.h"
#include "converter/readers/checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tern::fuzz::Die;
  static tern::fuzz::MemFile mem;
  const std::string path = mem.Write(data, size);
  // A training checkpoint ({"epoch": 3, "model": {...}}) is refused as "not a state dict";
  // then it is read again with --state-key model, as a user would.
  for (const char* key : {"", "model"}) {
    tern::convert::CheckpointOptions options;
    options.state_key = key;
    try {
      const auto ckpt = tern::convert::ReadTorchZip(path, options);
      tern::fuzz::CheckAndReadCheckpoint(ckpt, size, int64_t{1} << 22);
      break;
    } catch (const tern::convert::Error& e) {
      tern::fuzz::Refused(e.what());
      if (std::string(e.what()).find("not a state dict") == std::string::npos) break;
    } catch (const std::exception& e) {
      Die("ReadTorchZip threw something other than convert::Error", e.what());
    }
  }
  return 0;
}
