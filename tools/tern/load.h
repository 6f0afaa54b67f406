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

// Throws std::runtime_error with the loader's message.
LoadedModel LoadModel(const std::string& path);

}  // namespace tern::cli
