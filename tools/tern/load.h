// Mapping and verifying a .tern file for the CLI commands.
#pragma once

#include <string>

#include "platforms/posix/mapped_file.h"
#include "tern/tern.hpp"

namespace tern::cli {

struct LoadedModel {
  posix::MappedFile file;
  Model model;
};

// Throws std::runtime_error with the loader's message. read_into_memory (--no-mmap): read the
// file into memory instead of mapping it, so rewriting the file cannot affect this process.
LoadedModel LoadModel(const std::string& path, bool read_into_memory = false);

}  // namespace tern::cli
