// The C API's platform hook (runtime/api/platform.h) for a build without a file system (bare
// metal, a model linked into flash): there is no file to open, so the call says what to use
// instead rather than failing on a missing symbol or pretending to read.
#include "runtime/api/platform.h"

namespace tern::platform {

Status OpenModelFile(const char* path, ModelFile* file) {
  *file = ModelFile();
  return Status::Error(StatusCode::kNotSupported,
                       "cannot open %s: this build has no file system (TERN_PLATFORM=none); load "
                       "the model from memory (tern_model_load_from_memory)",
                       path == nullptr ? "(null)" : path);
}

void ReleaseModelFile(ModelFile* file) { *file = ModelFile(); }

}  // namespace tern::platform
