#include "tools/tern/load.h"

#include <stdexcept>

namespace tern::cli {

LoadedModel LoadModel(const std::string& path, bool read_into_memory) {
  auto file = read_into_memory ? posix::MappedFile::Read(path.c_str())
                               : posix::MappedFile::Open(path.c_str());
  if (!file.ok()) throw std::runtime_error(file.status().message());
  auto model = Model::Load(file->data(), file->size());
  if (!model.ok()) throw std::runtime_error(path + ": " + model.status().message());
  // Mapped: the pages of weights XNNPACK packed into the arena are dropped after packing, so
  // they are not resident twice (a heap copy, --no-mmap, keeps its bytes).
  if (file->mapped()) model->set_consumed_hook(&posix::MappedFile::DropPages, nullptr);
  return LoadedModel{std::move(file.value()), model.value()};
}

}  // namespace tern::cli
