// The project's config.json (docs/CONVENTIONS.md) <-> the runtime's ModelConfig.
#pragma once

#include <string>

#include "runtime/model/config.h"

namespace tern::convert {

// Parses and checks every field; unknown keys and wrong types are errors naming the key.
ModelConfig ParseModelConfig(const std::string& json_text, const std::string& label);
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace tern::convert
