// The C API's platform hook: how tern_model_load_from_file turns a path into bytes. The runtime
// and the C API name no platform; the program links exactly one implementation (CMake
// TERN_PLATFORM picks the one libtern and the tools get):
//   platforms/posix/model_file.cc  mmap of the file (Linux, macOS, any POSIX system)
//   platforms/none/model_file.cc   no file system (bare metal): refuses, and says to load the
//                                  model from memory (tern_model_load_from_memory)
// A board support package may provide its own pair instead, e.g. one that finds a model in a
// flash partition by name. Both functions are called from the C API only, never while
// translating.
#pragma once

#include <cstddef>

#include "runtime/core/status.h"

namespace tern::platform {

// A file's bytes as the platform made them readable. Empty: nothing to release.
struct ModelFile {
  const void* data = nullptr;  // at least kModelAlignment (16) aligned; 64 gives aligned weights
  size_t size = 0;
  void* handle = nullptr;  // the implementation's own (e.g. the mapping)
  // Optional (Model::ConsumedHook, called with `handle`): gives back the memory of bytes the
  // sessions packed a copy of, e.g. drops a mapping's pages. Null: the bytes stay as they are.
  void (*consumed)(void* handle, const void* data, size_t bytes) = nullptr;
};

// Makes the file at `path` readable until ReleaseModelFile; on failure `file` is left empty and
// the status names the path. The bytes must not change while a model made from them lives.
Status OpenModelFile(const char* path, ModelFile* file);

// Gives back what OpenModelFile took and empties `file`; an empty ModelFile is a no-op.
void ReleaseModelFile(ModelFile* file);

}  // namespace tern::platform
