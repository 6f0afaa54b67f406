// Typed reads of a Hugging Face config.json (the gpt2 and llama maps): a missing key takes the
// default transformers' config class has (or is an error naming it when required), a present
// key of the wrong type is an error naming it. `null` counts as missing, as in transformers.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "converter/error.h"

namespace tern::convert::arch {

class HfConfig {
 public:
  // model: the architecture's name in messages ("GPT-2 config lacks ...").
  HfConfig(const nlohmann::json& j, std::string label, std::string model)
      : j_(j), label_(std::move(label)), model_(std::move(model)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  const nlohmann::json& at(const char* key) const { return j_[key]; }
  int32_t Int(const char* key, bool required, int32_t fallback = 0) const {
    if (!has(key)) {
      if (required) throw Error(label_ + ": " + model_ + " config lacks \"" + key + "\"");
      return fallback;
    }
    if (!j_[key].is_number_integer() || j_[key].get<int64_t>() <= 0 ||
        j_[key].get<int64_t>() > INT32_MAX) {
      throw Error(label_ + ": \"" + key + "\" must be a positive integer");
    }
    return static_cast<int32_t>(j_[key].get<int64_t>());
  }
  int32_t Count(const char* key, int32_t fallback) const {  // an integer >= 0
    if (!has(key)) return fallback;
    if (!j_[key].is_number_integer() || j_[key].get<int64_t>() < 0 ||
        j_[key].get<int64_t>() > INT32_MAX) {
      throw Error(label_ + ": \"" + key + "\" must be an integer >= 0");
    }
    return static_cast<int32_t>(j_[key].get<int64_t>());
  }
  int32_t Id(const char* key, int32_t fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number_integer() || j_[key].get<int64_t>() < 0 ||
        j_[key].get<int64_t>() > INT32_MAX) {
      throw Error(label_ + ": \"" + key + "\" must be a token id (an integer >= 0)");
    }
    return static_cast<int32_t>(j_[key].get<int64_t>());
  }
  bool Bool(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_boolean()) throw Error(label_ + ": \"" + key + "\" must be true or false");
    return j_[key].get<bool>();
  }
  std::string String(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_string()) throw Error(label_ + ": \"" + key + "\" must be a string");
    return j_[key].get<std::string>();
  }
  float Number(const char* key, float fallback) const {
    if (!has(key)) return fallback;
    if (!j_[key].is_number() || !std::isfinite(j_[key].get<double>()) ||
        j_[key].get<double>() < 0) {
      throw Error(label_ + ": \"" + key + "\" must be a finite number >= 0");
    }
    return j_[key].get<float>();
  }

 private:
  const nlohmann::json& j_;
  std::string label_;
  std::string model_;
};

}  // namespace tern::convert::arch
