#include "converter/model_config_json.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "converter/error.h"

namespace tern::convert {

namespace {

template <typename E>
struct Choice {
  const char* name;
  E value;
};

template <typename E, size_t N>
E Pick(const nlohmann::json& v, const std::string& key, const Choice<E> (&choices)[N],
       const std::string& label) {
  if (!v.is_string()) throw Error(label + ": config \"" + key + "\" must be a string");
  const std::string s = v.get<std::string>();
  std::string allowed;
  for (const auto& c : choices) {
    if (s == c.name) return c.value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(c.name);
  }
  throw Error(label + ": config \"" + key + "\" = \"" + s + "\"; expected one of " + allowed);
}

template <typename E, size_t N>
const char* NameOf(E value, const Choice<E> (&choices)[N]) {
  for (const auto& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

template <typename E, size_t N>
nlohmann::ordered_json NamesOf(const Choice<E> (&choices)[N]) {
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (const auto& c : choices) names.push_back(c.name);
  return names;
}

const Choice<Architecture> kArchitectures[] = {{"encoder_decoder", Architecture::kEncoderDecoder},
                                               {"decoder_only", Architecture::kDecoderOnly},
                                               {"universal", Architecture::kUniversal}};
const Choice<ref::Activation> kActivations[] = {
    {"relu", ref::Activation::kReLU},     {"gelu", ref::Activation::kGELU},
    {"swish", ref::Activation::kSwish},   {"gelu_tanh", ref::Activation::kGELUTanh},
    {"swiglu", ref::Activation::kSwiGLU}, {"geglu", ref::Activation::kGeGLU}};
const Choice<NormPlacement> kNorms[] = {{"post", NormPlacement::kPost},
                                        {"pre", NormPlacement::kPre}};
const Choice<ref::NormKind> kNormKinds[] = {{"layer_norm", ref::NormKind::kLayerNorm},
                                            {"layer_norm_std_eps", ref::NormKind::kLayerNormStdEps},
                                            {"rms_norm", ref::NormKind::kRMSNorm}};
const Choice<PositionKind> kPositions[] = {{"sinusoidal", PositionKind::kSinusoidal},
                                           {"learned", PositionKind::kLearned},
                                           {"relative", PositionKind::kRelative},
                                           {"rotary", PositionKind::kRotary},
                                           {"none", PositionKind::kNone}};
const Choice<ref::SinusoidLayout> kLayouts[] = {
    {"interleaved", ref::SinusoidLayout::kInterleaved},
    {"concatenated", ref::SinusoidLayout::kConcatenated},
    {"split_halves", ref::SinusoidLayout::kSplitHalves},
    {"fairseq", ref::SinusoidLayout::kFairseq}};
const Choice<RelativeAttention> kRelatives[] = {{"shaw", RelativeAttention::kShaw},
                                                {"t5_bias", RelativeAttention::kT5Bias}};
const Choice<ref::RotaryScaling> kRotaryScalings[] = {{"none", ref::RotaryScaling::kNone},
                                                      {"linear", ref::RotaryScaling::kLinear},
                                                      {"llama3", ref::RotaryScaling::kLlama3}};

// The config.json names of each enum type of config_fields.h.
const auto& Choices(Architecture) { return kArchitectures; }
const auto& Choices(ref::Activation) { return kActivations; }
const auto& Choices(NormPlacement) { return kNorms; }
const auto& Choices(ref::NormKind) { return kNormKinds; }
const auto& Choices(PositionKind) { return kPositions; }
const auto& Choices(ref::SinusoidLayout) { return kLayouts; }
const auto& Choices(RelativeAttention) { return kRelatives; }
const auto& Choices(ref::RotaryScaling) { return kRotaryScalings; }

}  // namespace

namespace {

// Sets the fields of `c` named by the keys of `j`. Full mode (a whole config.json): the shape
// keys are required and missing ids/limits take their defaults. Partial mode (overrides on top
// of a config inferred from the weights): only the keys present change anything.
std::set<std::string> Apply(const nlohmann::json& j, const std::string& label, bool partial,
                            ModelConfig* out) {
  if (!j.is_object()) throw Error(label + ": config is not a JSON object");
  ModelConfig& c = *out;
  // Every integer is checked against the runtime's bounds (runtime/model/config.h ConfigBounds)
  // as it is read, whatever its source (config.json, safetensors metadata, --set): nothing is
  // sized from a value outside them (encoder_layers = 10^9 would build a 10^9-layer layout).
  auto integer = [&](const std::string& key, int32_t* field, bool required, int64_t lo,
                     int64_t hi) {
    if (!j.contains(key)) {
      if (required && !partial) throw Error(label + ": config lacks \"" + key + "\"");
      return;
    }
    const auto& v = j[key];
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      throw Error(label + ": config \"" + key + "\" must be an integer");
    }
    const int64_t value = v.get<int64_t>();
    if (value < lo || value > hi) {
      throw Error(label + ": config \"" + key + "\" = " + std::to_string(value) +
                  " is outside the runtime's bounds [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    }
    *field = static_cast<int32_t>(value);
  };
  using B = ConfigBounds;
  auto number = [&](const std::string& key, float* field) {
    if (!j.contains(key)) return;
    if (!j[key].is_number() || !std::isfinite(j[key].get<double>())) {
      throw Error(label + ": config \"" + key + "\" must be a finite number");
    }
    *field = j[key].get<float>();
  };
  auto boolean = [&](const std::string& key, bool* field) {
    if (!j.contains(key)) return;
    if (!j[key].is_boolean()) throw Error(label + ": config \"" + key + "\" must be true or false");
    *field = j[key].get<bool>();
  };
  // The keys that are not fields: vocab_size (both vocabularies) and what training configs
  // carry along (dropout, comment); then every field's.
  static const char* const kKnown[] = {"vocab_size", "dropout", "comment",
#define TERN_KEY(name, key, ...) key,
                                       TERN_CONFIG_FIELDS(TERN_KEY, TERN_KEY, TERN_KEY, TERN_KEY)
#undef TERN_KEY
  };
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) throw Error(label + ": config has unknown key \"" + it.key() + "\"");
    keys.insert(it.key());
  }
  // vocab_size sets both vocabularies; src_vocab_size / tgt_vocab_size, read after it, override
  // it, and are required only where it did not set them.
  if (j.contains("vocab_size") || !partial) {
    integer("vocab_size", &c.src_vocab_size, false, 0, B::kMaxVocab);
    c.tgt_vocab_size = c.src_vocab_size;
  }
  // Every field in the list's order: a required one must be present in a whole config.json
  // unless something above set it.
#define TERN_JSON_INT(name, key, def, lo, hi, flags, since) \
  integer(key, &c.name, ((flags)&FieldFlag::kRequired) && c.name == 0, lo, hi);
#define TERN_JSON_FLOAT(name, key, def, range, flags, since) number(key, &c.name);
#define TERN_JSON_BOOL(name, key, def, flags, since) boolean(key, &c.name);
#define TERN_JSON_ENUM(name, key, Type, SchemaEnum, def, flags, since) \
  if (j.contains(key)) c.name = Pick(j[key], key, Choices(Type{}), label);
  TERN_CONFIG_FIELDS(TERN_JSON_INT, TERN_JSON_FLOAT, TERN_JSON_BOOL, TERN_JSON_ENUM)
#undef TERN_JSON_INT
#undef TERN_JSON_FLOAT
#undef TERN_JSON_BOOL
#undef TERN_JSON_ENUM
  // The two defaults of config.json that are not ModelConfig's: an absent decoder_start_id is
  // bos_id (in a partial config, when bos_id is given), an absent max_positions 1024 (given, it
  // must be at least 1: 0 is not "the default").
  if (!j.contains("decoder_start_id") && (!partial || j.contains("bos_id"))) {
    c.decoder_start_id = c.bos_id;
  }
  if (c.max_positions == 0 && !partial) c.max_positions = 1024;
  return keys;
}

nlohmann::json ParseJson(const std::string& json_text, const std::string& label) {
  try {
    return nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(label + ": config is not valid JSON (" + e.what() + ")");
  }
}

}  // namespace

ModelConfig ParseModelConfig(const std::string& json_text, const std::string& label) {
  ModelConfig c;
  Apply(ParseJson(json_text, label), label, false, &c);
  return c;
}

std::set<std::string> ApplyConfigOverrides(const nlohmann::json& j, const std::string& label,
                                           ModelConfig* config) {
  return Apply(j, label, true, config);
}

std::string ModelConfigToJson(const ModelConfig& config) {
  const ModelConfig c = StoredConfig(config);
  nlohmann::ordered_json j;
#define TERN_PUT(key, name, def, flags, value) \
  if (!((flags)&FieldFlag::kSparse) || c.name != (def)) j[key] = value;
#define TERN_PUT_INT(name, key, def, lo, hi, flags, since) TERN_PUT(key, name, def, flags, c.name)
#define TERN_PUT_FLOAT(name, key, def, range, flags, since) TERN_PUT(key, name, def, flags, c.name)
#define TERN_PUT_BOOL(name, key, def, flags, since) TERN_PUT(key, name, def, flags, c.name)
#define TERN_PUT_ENUM(name, key, Type, SchemaEnum, def, flags, since) \
  TERN_PUT(key, name, def, flags, NameOf(c.name, Choices(Type{})))
  TERN_CONFIG_FIELDS(TERN_PUT_INT, TERN_PUT_FLOAT, TERN_PUT_BOOL, TERN_PUT_ENUM)
#undef TERN_PUT
#undef TERN_PUT_INT
#undef TERN_PUT_FLOAT
#undef TERN_PUT_BOOL
#undef TERN_PUT_ENUM
  return j.dump(2);
}

std::string ConfigFieldsJson() {
  // What an absent key means: a whole config.json that gives only the required fields.
  const ModelConfig absent = ParseModelConfig(
      R"({"d_model": 1, "heads": 1, "d_ff": 1, "src_vocab_size": 1, "tgt_vocab_size": 1})",
      "ConfigFieldsJson");
  nlohmann::ordered_json fields = nlohmann::ordered_json::array();
  // Required fields have no "absent" value (null).
  auto add = [&](const char* name, const char* key, const char* type, unsigned flags,
                 const nlohmann::ordered_json& absent_value) {
    const bool required = (flags & FieldFlag::kRequired) != 0;
    fields.push_back({{"name", name},
                      {"key", key},
                      {"type", type},
                      {"required", required},
                      {"sparse", (flags & FieldFlag::kSparse) != 0},
                      {"absent", required ? nlohmann::ordered_json() : absent_value}});
    return &fields.back();
  };
#define TERN_FIELD_INT(name, key, def, lo, hi, flags, since) \
  (*add(#name, key, "int", flags, absent.name))["bounds"] = {lo, hi};
#define TERN_FIELD_FLOAT(name, key, def, range, flags, since) \
  add(#name, key, "float", flags, absent.name);
#define TERN_FIELD_BOOL(name, key, def, flags, since) add(#name, key, "bool", flags, absent.name);
#define TERN_FIELD_ENUM(name, key, Type, SchemaEnum, def, flags, since)             \
  {                                                                                 \
    auto* f = add(#name, key, "enum", flags, NameOf(absent.name, Choices(Type{}))); \
    (*f)["choices"] = NamesOf(Choices(Type{}));                                     \
  }
  TERN_CONFIG_FIELDS(TERN_FIELD_INT, TERN_FIELD_FLOAT, TERN_FIELD_BOOL, TERN_FIELD_ENUM)
#undef TERN_FIELD_INT
#undef TERN_FIELD_FLOAT
#undef TERN_FIELD_BOOL
#undef TERN_FIELD_ENUM
  return fields.dump(2);
}

}  // namespace tern::convert
