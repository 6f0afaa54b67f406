// The C API's platform hook (runtime/api/platform.h) on POSIX: the model file is mapped
// read-only (MappedFile::Open), so nothing is copied and pages load on first use.
#include <new>
#include <utility>

#include "platforms/posix/mapped_file.h"
#include "runtime/api/platform.h"

namespace tern::platform {

Status OpenModelFile(const char* path, ModelFile* file) {
  *file = ModelFile();
  auto mapped = posix::MappedFile::Open(path);
  if (!mapped.ok()) return mapped.status();
  // The mapping outlives this call, owned by the handle; one small block per loaded file (the
  // C API allocates its model handle here too: loading is before the allocation-free part).
  auto* owner = new (std::nothrow) posix::MappedFile(std::move(mapped.value()));
  if (owner == nullptr) {
    return Status::Error(StatusCode::kOutOfMemory, "cannot allocate the mapping record of %s",
                         path);
  }
  file->data = owner->data();
  file->size = owner->size();
  file->handle = owner;
  file->consumed = &posix::MappedFile::DropPages;  // packed weights are not resident twice
  return Status::Ok();
}

void ReleaseModelFile(ModelFile* file) {
  delete static_cast<posix::MappedFile*>(file->handle);  // unmaps
  *file = ModelFile();
}

}  // namespace tern::platform
