// The model's hyperparameters as the runtime uses them: a plain copy of schema Config, taken
// once at load so the hot path never touches FlatBuffers accessors.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/activations.h"
#include "runtime/kernels/reference/layer_norm.h"
#include "runtime/kernels/reference/positions.h"

namespace tern {

enum class Architecture : uint8_t { kEncoderDecoder = 0, kDecoderOnly = 1, kUniversal = 2 };
enum class NormPlacement : uint8_t { kPost = 0, kPre = 1 };
enum class RelativeAttention : uint8_t { kShaw = 0, kT5Bias = 1 };
enum class PositionKind : uint8_t {
  kSinusoidal = 0,
  kLearned = 1,
  kRelative = 2,
  kRotary = 3,
  kNone = 4
};

struct ModelConfig {
  Architecture architecture = Architecture::kEncoderDecoder;
  int32_t d_model = 0;
  int32_t heads = 0;
  int32_t encoder_layers = 0;
  int32_t decoder_layers = 0;
  int32_t d_ff = 0;
  ref::Activation activation = ref::Activation::kReLU;
  NormPlacement norm_placement = NormPlacement::kPost;
  ref::NormKind norm_kind = ref::NormKind::kLayerNorm;
  float layer_norm_eps = 1e-5f;
  PositionKind position = PositionKind::kSinusoidal;
  ref::SinusoidLayout sinusoid_layout = ref::SinusoidLayout::kInterleaved;
  float embedding_scale = 1.0f;
  bool shared_embeddings = false;
  bool tied_output = false;
  int32_t src_vocab_size = 0;
  int32_t tgt_vocab_size = 0;
  int32_t pad_id = 0;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 3;
  int32_t decoder_start_id = 1;
  int32_t max_positions = 0;
  int32_t universal_steps = 0;
  bool post_ln_final_norm = false;
  RelativeAttention relative_attention = RelativeAttention::kShaw;
  int32_t relative_max_distance = 16;
  int32_t relative_buckets = 32;
  int32_t rotary_dim = 0;  // 0: all of d_head
  float rotary_base = 10000.0f;
  float act_threshold = 0.0f;  // 0: no adaptive computation time
  int32_t kv_heads = 0;        // K/V heads (grouped-query attention); ReadConfig makes 0 = heads

  // Whether each stack ends with a final norm (encoder.layer_norm / decoder.layer_norm).
  bool has_final_norm() const {
    return norm_placement == NormPlacement::kPre || post_ln_final_norm;
  }
  int32_t d_head() const { return heads > 0 ? d_model / heads : 0; }
  // K/V heads (0 in a config not read from a file means heads) and the columns of a K or V
  // row: kv_heads * d_head (d_model for the paper's attention).
  int32_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int32_t d_kv() const { return kv_head_count() * d_head(); }
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

}  // namespace tern
