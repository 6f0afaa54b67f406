// The project's config.json (docs/CONVENTIONS.md) <-> the runtime's ModelConfig.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "runtime/model/config.h"

namespace tern::convert {

// Parses and checks every field; unknown keys and wrong types are errors naming the key.
ModelConfig ParseModelConfig(const std::string& json_text, const std::string& label);
std::string ModelConfigToJson(const ModelConfig& config);

// Overrides (a partial config object with the same keys) applied onto `config`, e.g. the
// `--set key=value` options or a --map's "config". Returns the keys that were set.
std::set<std::string> ApplyConfigOverrides(const nlohmann::json& overrides,
                                           const std::string& label, ModelConfig* config);

}  // namespace tern::convert
