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

// The field list (runtime/model/config_fields.h) as JSON, one object per field in order: name,
// config.json key, type (int, float, bool, enum with its "choices"), required, sparse, the
// value an absent key gives ("absent"; null for required fields) and, for integers, config.json's
// bounds. For the tests that check the PyTorch reference's Config against the runtime's.
std::string ConfigFieldsJson();

// Overrides (a partial config object with the same keys) applied onto `config`, e.g. the
// `--set key=value` options or a --map's "config". Returns the keys that were set.
std::set<std::string> ApplyConfigOverrides(const nlohmann::json& overrides,
                                           const std::string& label, ModelConfig* config);

}  // namespace tern::convert
