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

const Choice<Architecture> kArchitectures[] = {{"encoder_decoder", Architecture::kEncoderDecoder},
                                               {"decoder_only", Architecture::kDecoderOnly},
                                               {"universal", Architecture::kUniversal}};
const Choice<ref::Activation> kActivations[] = {{"relu", ref::Activation::kReLU},
                                                {"gelu", ref::Activation::kGELU},
                                                {"swish", ref::Activation::kSwish},
                                                {"gelu_tanh", ref::Activation::kGELUTanh},
                                                {"swiglu", ref::Activation::kSwiGLU}};
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
    {"split_halves", ref::SinusoidLayout::kSplitHalves}};
const Choice<RelativeAttention> kRelatives[] = {{"shaw", RelativeAttention::kShaw},
                                                {"t5_bias", RelativeAttention::kT5Bias}};

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
  const int64_t max_id = B::kMaxVocab - 1;
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
  static const char* const kKnown[] = {"architecture",
                                       "d_model",
                                       "heads",
                                       "encoder_layers",
                                       "decoder_layers",
                                       "d_ff",
                                       "activation",
                                       "norm",
                                       "norm_kind",
                                       "layer_norm_eps",
                                       "position",
                                       "sinusoid_layout",
                                       "embedding_scale",
                                       "shared_embeddings",
                                       "tied_output",
                                       "src_vocab_size",
                                       "tgt_vocab_size",
                                       "vocab_size",
                                       "pad_id",
                                       "bos_id",
                                       "eos_id",
                                       "unk_id",
                                       "decoder_start_id",
                                       "max_positions",
                                       "universal_steps",
                                       "post_ln_final_norm",
                                       "relative_attention",
                                       "relative_max_distance",
                                       "relative_buckets",
                                       "rotary_dim",
                                       "rotary_base",
                                       "act_threshold",
                                       "kv_heads",
                                       "dropout",
                                       "comment"};
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) throw Error(label + ": config has unknown key \"" + it.key() + "\"");
    keys.insert(it.key());
  }
  if (j.contains("architecture"))
    c.architecture = Pick(j["architecture"], "architecture", kArchitectures, label);
  integer("d_model", &c.d_model, true, 1, B::kMaxDModel);
  integer("heads", &c.heads, true, 1, B::kMaxDModel);
  integer("encoder_layers", &c.encoder_layers, false, 0, B::kMaxLayers);
  integer("decoder_layers", &c.decoder_layers, false, 0, B::kMaxLayers);
  integer("d_ff", &c.d_ff, true, 1, B::kMaxDff);
  if (j.contains("activation"))
    c.activation = Pick(j["activation"], "activation", kActivations, label);
  if (j.contains("norm")) c.norm_placement = Pick(j["norm"], "norm", kNorms, label);
  if (j.contains("norm_kind")) c.norm_kind = Pick(j["norm_kind"], "norm_kind", kNormKinds, label);
  number("layer_norm_eps", &c.layer_norm_eps);
  if (j.contains("position")) c.position = Pick(j["position"], "position", kPositions, label);
  if (j.contains("sinusoid_layout")) {
    c.sinusoid_layout = Pick(j["sinusoid_layout"], "sinusoid_layout", kLayouts, label);
  }
  number("embedding_scale", &c.embedding_scale);
  boolean("shared_embeddings", &c.shared_embeddings);
  boolean("tied_output", &c.tied_output);
  if (j.contains("vocab_size") || !partial) {
    integer("vocab_size", &c.src_vocab_size, false, 0, B::kMaxVocab);
    c.tgt_vocab_size = c.src_vocab_size;
  }
  integer("src_vocab_size", &c.src_vocab_size, c.src_vocab_size == 0, 0, B::kMaxVocab);
  integer("tgt_vocab_size", &c.tgt_vocab_size, c.tgt_vocab_size == 0, 1, B::kMaxVocab);
  integer("pad_id", &c.pad_id, false, 0, max_id);
  integer("bos_id", &c.bos_id, false, 0, max_id);
  integer("eos_id", &c.eos_id, false, 0, max_id);
  integer("unk_id", &c.unk_id, false, 0, max_id);
  if (!partial || j.contains("bos_id")) c.decoder_start_id = c.bos_id;
  integer("decoder_start_id", &c.decoder_start_id, false, 0, max_id);
  // Absent: 1024; given, it must be at least 1 (0 is not "the default").
  integer("max_positions", &c.max_positions, false, 1, B::kMaxPositions);
  if (c.max_positions == 0 && !partial) c.max_positions = 1024;
  integer("universal_steps", &c.universal_steps, false, 0, B::kMaxLayers);
  boolean("post_ln_final_norm", &c.post_ln_final_norm);
  if (j.contains("relative_attention")) {
    c.relative_attention = Pick(j["relative_attention"], "relative_attention", kRelatives, label);
  }
  integer("relative_max_distance", &c.relative_max_distance, false, 1, B::kMaxPositions);
  integer("relative_buckets", &c.relative_buckets, false, 1, B::kMaxRelativeBuckets);
  integer("rotary_dim", &c.rotary_dim, false, 0, B::kMaxDModel);
  number("rotary_base", &c.rotary_base);
  number("act_threshold", &c.act_threshold);
  integer("kv_heads", &c.kv_heads, false, 0, B::kMaxDModel);  // 0: heads
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

std::string ModelConfigToJson(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["architecture"] = NameOf(c.architecture, kArchitectures);
  j["d_model"] = c.d_model;
  j["heads"] = c.heads;
  j["encoder_layers"] = c.encoder_layers;
  j["decoder_layers"] = c.decoder_layers;
  j["d_ff"] = c.d_ff;
  j["activation"] = NameOf(c.activation, kActivations);
  j["norm"] = NameOf(c.norm_placement, kNorms);
  j["norm_kind"] = NameOf(c.norm_kind, kNormKinds);
  j["layer_norm_eps"] = c.layer_norm_eps;
  j["position"] = NameOf(c.position, kPositions);
  j["sinusoid_layout"] = NameOf(c.sinusoid_layout, kLayouts);
  j["embedding_scale"] = c.embedding_scale;
  j["shared_embeddings"] = c.shared_embeddings;
  j["tied_output"] = c.tied_output;
  j["src_vocab_size"] = c.src_vocab_size;
  j["tgt_vocab_size"] = c.tgt_vocab_size;
  j["pad_id"] = c.pad_id;
  j["bos_id"] = c.bos_id;
  j["eos_id"] = c.eos_id;
  j["unk_id"] = c.unk_id;
  j["decoder_start_id"] = c.decoder_start_id;
  j["max_positions"] = c.max_positions;
  j["universal_steps"] = c.universal_steps;
  j["post_ln_final_norm"] = c.post_ln_final_norm;
  j["relative_attention"] = NameOf(c.relative_attention, kRelatives);
  j["relative_max_distance"] = c.relative_max_distance;
  j["relative_buckets"] = c.relative_buckets;
  j["rotary_dim"] = c.rotary_dim;
  j["rotary_base"] = c.rotary_base;
  j["act_threshold"] = c.act_threshold;
  if (c.kv_heads != 0 && c.kv_heads != c.heads) j["kv_heads"] = c.kv_heads;
  return j.dump(2);
}

}  // namespace tern::convert
