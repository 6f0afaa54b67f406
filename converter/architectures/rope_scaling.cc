#include "converter/architectures/rope_scaling.h"

#include <cmath>
#include <set>

#include "converter/error.h"

namespace tern::convert::arch {

namespace {

double PositiveNumber(const nlohmann::json& scaling, const char* key, const std::string& where) {
  if (!scaling.contains(key) || scaling[key].is_null()) {
    throw Error(where + " lacks \"" + key + "\"");
  }
  const nlohmann::json& v = scaling[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0)) {
    throw Error(where + ": \"" + key + "\" = " + v.dump() + " must be a finite number > 0");
  }
  return v.get<double>();
}

}  // namespace

void MapRopeScaling(const HfConfig& hf, const std::string& label, ModelConfig* c) {
  c->rotary_scaling = ref::RotaryScaling::kNone;
  if (!hf.has("rope_scaling")) return;
  const nlohmann::json& s = hf.at("rope_scaling");
  const std::string where = label + ": \"rope_scaling\" " + s.dump();
  if (!s.is_object()) throw Error(where + " is not an object");
  // transformers reads "rope_type", and "type" from older configs.
  const char* type_key = s.contains("rope_type") ? "rope_type" : "type";
  if (!s.contains(type_key) || !s[type_key].is_string()) {
    throw Error(where + " has no \"rope_type\" (or \"type\") string");
  }
  const std::string type = s[type_key].get<std::string>();
  std::set<std::string> keys = {"rope_type", "type"};
  if (type == "default") {
  } else if (type == "linear") {
    keys.insert("factor");
    c->rotary_scaling = ref::RotaryScaling::kLinear;
    c->rotary_scaling_factor = static_cast<float>(PositiveNumber(s, "factor", where));
  } else if (type == "llama3") {
    keys.insert(
        {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
    c->rotary_scaling = ref::RotaryScaling::kLlama3;
    c->rotary_scaling_factor = static_cast<float>(PositiveNumber(s, "factor", where));
    c->rotary_low_freq_factor = static_cast<float>(PositiveNumber(s, "low_freq_factor", where));
    c->rotary_high_freq_factor = static_cast<float>(PositiveNumber(s, "high_freq_factor", where));
    const nlohmann::json& original = s.value("original_max_position_embeddings", nlohmann::json());
    if (!original.is_number_integer() || original.get<int64_t>() < 1 ||
        original.get<int64_t>() > ConfigBounds::kMaxPositions) {
      throw Error(where + ": \"original_max_position_embeddings\" must be an integer in [1, " +
                  std::to_string(ConfigBounds::kMaxPositions) + "]");
    }
    c->rotary_original_max_positions = static_cast<int32_t>(original.get<int64_t>());
    if (!(c->rotary_high_freq_factor > c->rotary_low_freq_factor)) {
      throw Error(where + ": \"high_freq_factor\" must be greater than \"low_freq_factor\"");
    }
  } else {
    throw Error(where + ": rope type \"" + type +
                "\" is not supported (tern implements \"default\", \"linear\" and \"llama3\")");
  }
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (!keys.count(it.key())) {
      throw Error(where + ": key \"" + it.key() + "\" is not supported with rope type \"" + type +
                  "\"");
    }
  }
}

}  // namespace tern::convert::arch
