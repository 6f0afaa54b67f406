// The one list of the model config's fields (issue 14). Everything that enumerates fields is
// generated from it: ModelConfig's members (config.h), the loader's read, enum checks and simple
// bounds (model.cc), the converter's FlatBuffer writer (converter/writer.cc) and its config.json
// reader and writer (converter/model_config_json.cc). tools/model/tern_torch.py's Config is
// checked against it by a test (tools/model/test_canonical_lists.py). A plain new field is a
// line here, its slot in schema/tern.fbs (same name, same place in the order) and its attribute
// in tern_torch.Config; a rule that relates it to other fields goes in CheckModelConfig.
//
// TERN_CONFIG_FIELDS(INT, FLOAT, BOOL, ENUM) calls, once per field in schema order (the
// writers' order, which fixes the bytes of a file):
//   INT(name, key, default, lo, hi, flags, since)         int32_t
//   FLOAT(name, key, default, range, flags, since)        float; range: FloatRange, checked at load
//   BOOL(name, key, default, flags, since)                bool
//   ENUM(name, key, Type, SchemaEnum, default, flags, since)
//                                                  Type: the C++ enum; SchemaEnum: the schema's
//                                                  (schema::SchemaEnum_MIN .. _MAX at load)
// name: the ModelConfig member and the schema field; key: the config.json key (the name but for
// "norm"). lo, hi: config.json's bounds, which keep every size computation far from overflow.
// flags (FieldFlag):
//   kRange     the loader refuses values outside [lo, hi] ("config.<name> = v is out of range");
//              without it CheckModelConfig holds the field's own rule (heads divides d_model,
//              ids below the vocabulary, ...) and [lo, hi] bound config.json only;
//   kRequired  config.json must give it (unless set before: vocab_size sets both vocabularies);
//   kSparse    written only when it differs from its default, so that files that do not use it
//              are byte for byte what an older converter wrote (fields after format 1.2).
// since: the format minor version that added the field. The writer stamps a file with the
// highest `since` of the fields that differ from their default (at least 2, what every file
// written since 1.2 says; converter/writer.cc FormatMinor), so a file that uses no newer field
// keeps the version, and the bytes, an older converter wrote.
#pragma once

#include <cstdint>

namespace tern {

struct FieldFlag {
  enum : unsigned { kNone = 0, kRange = 1, kRequired = 2, kSparse = 4 };
};

// What the loader accepts of a float field; each has its message (model.cc CheckFloatField).
enum class FloatRange : uint8_t {
  kFinite,       // "is not finite"
  kNonNegative,  // finite and >= 0
  kPositive,     // finite and > 0
  kUnit,         // in [0, 1)
};

// clang-format off
#define TERN_CONFIG_FIELDS(INT, FLOAT, BOOL, ENUM)                                                 \
  ENUM(architecture, "architecture", Architecture, Architecture, Architecture::kEncoderDecoder,    \
       FieldFlag::kNone, 0)                                                                        \
  INT(d_model, "d_model", 0, 1, ConfigBounds::kMaxDModel,                                         \
      FieldFlag::kRange | FieldFlag::kRequired, 0)                                                 \
  INT(heads, "heads", 0, 1, ConfigBounds::kMaxDModel, FieldFlag::kRequired, 0)                     \
  INT(encoder_layers, "encoder_layers", 0, 0, ConfigBounds::kMaxLayers, FieldFlag::kRange, 0)      \
  INT(decoder_layers, "decoder_layers", 0, 0, ConfigBounds::kMaxLayers, FieldFlag::kRange, 0)      \
  INT(d_ff, "d_ff", 0, 1, ConfigBounds::kMaxDff, FieldFlag::kRange | FieldFlag::kRequired, 0)      \
  ENUM(activation, "activation", ref::Activation, Activation, ref::Activation::kReLU,              \
       FieldFlag::kNone, 0)                                                                        \
  ENUM(norm_placement, "norm", NormPlacement, NormPlacement, NormPlacement::kPost,                 \
       FieldFlag::kNone, 0)                                                                        \
  ENUM(norm_kind, "norm_kind", ref::NormKind, NormKind, ref::NormKind::kLayerNorm,                 \
       FieldFlag::kNone, 0)                                                                        \
  FLOAT(layer_norm_eps, "layer_norm_eps", 1e-5f, FloatRange::kNonNegative, FieldFlag::kNone, 0)    \
  ENUM(position, "position", PositionKind, PositionKind, PositionKind::kSinusoidal,                \
       FieldFlag::kNone, 0)                                                                        \
  ENUM(sinusoid_layout, "sinusoid_layout", ref::SinusoidLayout, SinusoidLayout,                    \
       ref::SinusoidLayout::kInterleaved, FieldFlag::kNone, 0)                                     \
  FLOAT(embedding_scale, "embedding_scale", 1.0f, FloatRange::kFinite, FieldFlag::kNone, 0)        \
  BOOL(shared_embeddings, "shared_embeddings", false, FieldFlag::kNone, 0)                         \
  BOOL(tied_output, "tied_output", false, FieldFlag::kNone, 0)                                     \
  INT(src_vocab_size, "src_vocab_size", 0, 0, ConfigBounds::kMaxVocab, FieldFlag::kRequired, 0)    \
  INT(tgt_vocab_size, "tgt_vocab_size", 0, 1, ConfigBounds::kMaxVocab,                             \
      FieldFlag::kRange | FieldFlag::kRequired, 0)                                                 \
  INT(pad_id, "pad_id", 0, 0, ConfigBounds::kMaxVocab - 1, FieldFlag::kNone, 0)                    \
  INT(bos_id, "bos_id", 1, 0, ConfigBounds::kMaxVocab - 1, FieldFlag::kNone, 0)                    \
  INT(eos_id, "eos_id", 2, 0, ConfigBounds::kMaxVocab - 1, FieldFlag::kNone, 0)                    \
  INT(unk_id, "unk_id", 3, 0, ConfigBounds::kMaxVocab - 1, FieldFlag::kNone, 0)                    \
  INT(decoder_start_id, "decoder_start_id", 1, 0, ConfigBounds::kMaxVocab - 1, FieldFlag::kNone,  \
      0)                                                                                           \
  INT(max_positions, "max_positions", 0, 1, ConfigBounds::kMaxPositions, FieldFlag::kRange, 0)     \
  INT(universal_steps, "universal_steps", 0, 0, ConfigBounds::kMaxLayers, FieldFlag::kRange, 0)    \
  BOOL(post_ln_final_norm, "post_ln_final_norm", false, FieldFlag::kNone, 1)                       \
  ENUM(relative_attention, "relative_attention", RelativeAttention, RelativeAttention,             \
       RelativeAttention::kShaw, FieldFlag::kNone, 2)                                              \
  INT(relative_max_distance, "relative_max_distance", 16, 1, ConfigBounds::kMaxPositions,          \
      FieldFlag::kRange, 2)                                                                        \
  INT(relative_buckets, "relative_buckets", 32, 1, ConfigBounds::kMaxRelativeBuckets,              \
      FieldFlag::kRange, 2)                                                                        \
  /* 0: all of d_head */                                                                           \
  INT(rotary_dim, "rotary_dim", 0, 0, ConfigBounds::kMaxDModel, FieldFlag::kNone, 2)               \
  FLOAT(rotary_base, "rotary_base", 10000.0f, FloatRange::kPositive, FieldFlag::kNone, 2)          \
  /* 0: no adaptive computation time */                                                            \
  FLOAT(act_threshold, "act_threshold", 0.0f, FloatRange::kUnit, FieldFlag::kNone, 2)              \
  /* K/V heads (grouped-query attention); 0: heads (kv_head_count()) */                            \
  INT(kv_heads, "kv_heads", 0, 0, ConfigBounds::kMaxDModel, FieldFlag::kSparse, 3)                 \
  /* rotary positions scaled for longer contexts (rope_scaling): none, linear, llama3 */           \
  ENUM(rotary_scaling, "rotary_scaling", ref::RotaryScaling, RotaryScaling,                        \
       ref::RotaryScaling::kNone, FieldFlag::kSparse, 6)                                           \
  /* linear: positions divided by it; llama3: the low frequencies divided by it */                 \
  FLOAT(rotary_scaling_factor, "rotary_scaling_factor", 1.0f, FloatRange::kPositive,               \
        FieldFlag::kSparse, 6)                                                                     \
  /* llama3: wavelengths above original / low are scaled, below original / high kept */            \
  FLOAT(rotary_low_freq_factor, "rotary_low_freq_factor", 0.0f, FloatRange::kNonNegative,          \
        FieldFlag::kSparse, 6)                                                                     \
  FLOAT(rotary_high_freq_factor, "rotary_high_freq_factor", 0.0f, FloatRange::kNonNegative,        \
        FieldFlag::kSparse, 6)                                                                     \
  INT(rotary_original_max_positions, "rotary_original_max_positions", 0, 0,                        \
      ConfigBounds::kMaxPositions, FieldFlag::kRange | FieldFlag::kSparse, 6)                      \
  /* columns per head; 0: d_model / heads (d_head()); set: heads * head_dim may differ */          \
  INT(head_dim, "head_dim", 0, 0, ConfigBounds::kMaxDModel,                                        \
      FieldFlag::kRange | FieldFlag::kSparse, 6)                                                   \
  /* decoder-only: each query sees its last sliding_window keys, itself included; 0: all */      \
  INT(sliding_window, "sliding_window", 0, 0, ConfigBounds::kMaxPositions,                         \
      FieldFlag::kRange | FieldFlag::kSparse, 7)                                                   \
  /* a LayerNorm on embeddings + positions, each stack (BART's layernorm_embedding) */             \
  BOOL(layernorm_embedding, "layernorm_embedding", false, FieldFlag::kSparse, 7)                   \
  /* the first generated token of every translation (forced_bos_token_id); -1: none */           \
  INT(forced_bos_id, "forced_bos_id", -1, -1, ConfigBounds::kMaxVocab - 1, FieldFlag::kSparse, 7)
// clang-format on

}  // namespace tern
