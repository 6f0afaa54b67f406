// The model's hyperparameters as the runtime uses them: a plain copy of schema Config, taken
// once at load so the hot path never touches FlatBuffers accessors. The fields themselves are
// listed once, in config_fields.h.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/activations.h"
#include "runtime/kernels/reference/layer_norm.h"
#include "runtime/kernels/reference/positions.h"
#include "runtime/kernels/reference/rotary.h"
#include "runtime/model/config_fields.h"

namespace tern {

enum class Architecture : uint8_t {
  kEncoderDecoder = 0,
  kDecoderOnly = 1,
  kUniversal = 2,
  // The stored form of kDecoderOnly with sliding_window set (FileConfig writes it, the loader
  // reads it back as kDecoderOnly): a reader older than format 1.7, which ignores
  // sliding_window, refuses the file as an unknown architecture instead of attending to every
  // earlier key. Never in a loaded config.
  kDecoderOnlyWindowed = 3
};
// kPostEmbeddingNorm / kPreEmbeddingNorm: the stored form of kPost / kPre with
// layernorm_embedding set (FileConfig writes it, the loader reads it back): a reader older than
// format 1.7, which ignores layernorm_embedding, refuses the file as an unknown norm placement
// instead of running it without the norm. Never in a loaded config.
enum class NormPlacement : uint8_t {
  kPost = 0,
  kPre = 1,
  kPostEmbeddingNorm = 2,
  kPreEmbeddingNorm = 3
};
enum class RelativeAttention : uint8_t { kShaw = 0, kT5Bias = 1 };
enum class PositionKind : uint8_t {
  kSinusoidal = 0,
  kLearned = 1,
  kRelative = 2,
  kRotary = 3,
  kNone = 4,
  // The stored form of kRotary with rotary_scaling set (FileConfig writes it, the loader reads it
  // back as kRotary): a reader older than format 1.6, which ignores rotary_scaling, refuses the
  // file as an unknown position kind instead of running unscaled frequencies. Never in a loaded
  // config.
  kRotaryScaled = 5
};

// Upper bounds that keep every size computation far from overflow; a config beyond them is
// rejected before anything is sized from it.
struct ConfigBounds {
  static constexpr int32_t kMaxDModel = 1 << 16;
  static constexpr int32_t kMaxLayers = 1024;
  static constexpr int32_t kMaxDff = 1 << 18;
  static constexpr int32_t kMaxVocab = 1 << 22;
  static constexpr int32_t kMaxPositions = 1 << 20;
  static constexpr int32_t kMaxRelativeBuckets = 1 << 10;
};

// One member per field of config_fields.h, with its default.
struct ModelConfig {
#define TERN_INT_MEMBER(name, key, def, lo, hi, flags, since) int32_t name = def;
#define TERN_FLOAT_MEMBER(name, key, def, range, flags, since) float name = def;
#define TERN_BOOL_MEMBER(name, key, def, flags, since) bool name = def;
#define TERN_ENUM_MEMBER(name, key, Type, SchemaEnum, def, flags, since) Type name = def;
  TERN_CONFIG_FIELDS(TERN_INT_MEMBER, TERN_FLOAT_MEMBER, TERN_BOOL_MEMBER, TERN_ENUM_MEMBER)
#undef TERN_INT_MEMBER
#undef TERN_FLOAT_MEMBER
#undef TERN_BOOL_MEMBER
#undef TERN_ENUM_MEMBER

  // Whether each stack ends with a final norm (encoder.layer_norm / decoder.layer_norm).
  bool has_final_norm() const {
    return norm_placement == NormPlacement::kPre || post_ln_final_norm;
  }
  // Columns of one head: head_dim when set (Gemma, T5), else d_model / heads.
  int32_t d_head() const { return head_dim > 0 ? head_dim : heads > 0 ? d_model / heads : 0; }
  // Columns of all query heads (the attention's output before W^O): d_model unless head_dim.
  int32_t d_q() const { return heads * d_head(); }
  // K/V heads (kv_heads 0, the default, means heads) and the columns of a K or V row:
  // kv_heads * d_head (d_model for the paper's attention).
  int32_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int32_t d_kv() const { return kv_head_count() * d_head(); }
};

// The format minor version that added an enum value (config_fields.h's since column is per
// field): the writer stamps it too (converter/writer.cc FormatMinor).
template <typename E>
constexpr uint16_t ValueSince(E) {
  return 0;
}
inline uint16_t ValueSince(ref::Activation a) {
  return a == ref::Activation::kGeGLU ? 6 : a == ref::Activation::kSwiGLU ? 2 : 0;
}
inline uint16_t ValueSince(PositionKind p) { return p == PositionKind::kRotaryScaled ? 6 : 0; }
inline uint16_t ValueSince(NormPlacement n) {
  return n == NormPlacement::kPostEmbeddingNorm || n == NormPlacement::kPreEmbeddingNorm ? 7 : 0;
}
inline uint16_t ValueSince(Architecture a) {
  return a == Architecture::kDecoderOnlyWindowed ? 7 : 0;
}
inline uint16_t ValueSince(ref::SinusoidLayout l) {
  return l == ref::SinusoidLayout::kFairseq ? 7 : 0;
}

// The config as the writers store it (the file, config.json): the one value that means the
// default without being it, kv_heads = heads, becomes the default 0, so a multi-head model's file
// is the same whichever way its kv_heads was given (and byte for byte what format 1.2 wrote).
inline ModelConfig StoredConfig(ModelConfig c) {
  if (c.kv_heads == c.heads) c.kv_heads = 0;
  return c;
}

// The rotary frequency rule a config gives (base and rope scaling), for the tables and for the
// converter's check of a checkpoint's inv_freq buffer.
inline ref::RotaryFrequencies RotaryFrequenciesOf(const ModelConfig& c) {
  ref::RotaryFrequencies f;
  f.base = c.rotary_base;
  f.scaling = c.rotary_scaling;
  f.factor = c.rotary_scaling_factor;
  f.low_freq_factor = c.rotary_low_freq_factor;
  f.high_freq_factor = c.rotary_high_freq_factor;
  f.original_max_positions = c.rotary_original_max_positions;
  return f;
}

// The config as the .tern file stores it: StoredConfig, scaled rotary positions as
// kRotaryScaled and a windowed decoder-only model as kDecoderOnlyWindowed (see there).
// config.json keeps "rotary" with its rotary_scaling keys, and "decoder_only" with its
// sliding_window.
inline ModelConfig FileConfig(ModelConfig c) {
  c = StoredConfig(c);
  if (c.position == PositionKind::kRotary && c.rotary_scaling != ref::RotaryScaling::kNone)
    c.position = PositionKind::kRotaryScaled;
  if (c.architecture == Architecture::kDecoderOnly && c.sliding_window != 0)
    c.architecture = Architecture::kDecoderOnlyWindowed;
  if (c.layernorm_embedding) {
    c.norm_placement = c.norm_placement == NormPlacement::kPre ? NormPlacement::kPreEmbeddingNorm
                                                               : NormPlacement::kPostEmbeddingNorm;
  }
  return c;
}

}  // namespace tern
