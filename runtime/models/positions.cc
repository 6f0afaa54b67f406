#include "runtime/models/positions.h"

#include "runtime/kernels/ops.h"
#include "runtime/memory/planner.h"
#include "runtime/models/encoder_decoder.h"

namespace tern {

// Floats of the session's position tables (for positions [0, L), L = the longer of the source
// and target limits): sinusoidal: one [L, d] table; learned: the encoder's and the decoder's
// rows, dequantized; rotary: cos and sin [L, rotary_dim / 2]; T5: the encoder's and decoder's
// bias by distance, [heads, 2L - 1] each; Shaw and none: nothing.
size_t PositionFloats(const ModelConfig& c, const Limits& limits) {
  const size_t rows = static_cast<size_t>(limits.max_source_length > limits.max_target_length
                                              ? limits.max_source_length
                                              : limits.max_target_length);
  const size_t d = static_cast<size_t>(c.d_model);
  switch (c.position) {
    case PositionKind::kSinusoidal:
      return CheckedMul(rows, d);
    case PositionKind::kLearned:
      return CheckedMul(2 * rows, d);
    case PositionKind::kRotary:
      return CheckedMul(rows, static_cast<size_t>(c.rotary_dim > 0 ? c.rotary_dim : c.d_head()));
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        return CheckedMul(2 * static_cast<size_t>(c.heads), 2 * rows - 1);
      }
      return 0;
    case PositionKind::kNone:
      return 0;
  }
  return 0;
}

void EncoderDecoder::PreparePositions(float* relative_scratch) {
  const ModelConfig& c = config_;
  const int64_t d = c.d_model, rows = position_rows_;
  enc_positions_ = dec_positions_ = nullptr;
  switch (c.position) {
    case PositionKind::kSinusoidal:
      ops::SinusoidalPositions(0, rows, d, c.sinusoid_layout, positions_);
      enc_positions_ = dec_positions_ = positions_;
      break;
    case PositionKind::kLearned: {
      // Rows 0..rows-1 of each table, dequantized once (the tables may be int8 like embeddings).
      float* enc = positions_;
      float* dec = positions_ + rows * d;
      for (int32_t p = 0; p < rows; ++p) {
        ops::Embedding(weights_.encoder_learned, &p, 1, 1.0f, enc + p * d);
        ops::Embedding(weights_.decoder_learned, &p, 1, 1.0f, dec + p * d);
      }
      enc_positions_ = enc;
      dec_positions_ = dec;
      break;
    }
    case PositionKind::kRotary: {
      rotary_.rotary_dim = c.rotary_dim > 0 ? c.rotary_dim : c.d_head();
      float* cos = positions_;
      float* sin = positions_ + rows * (rotary_.rotary_dim / 2);
      ops::RotaryTables(rows, rotary_.rotary_dim, c.rotary_base, cos, sin);
      rotary_.cos = cos;
      rotary_.sin = sin;
      enc_scratch_.positions.rotary = &rotary_;
      dec_scratch_.positions.rotary = &rotary_;
      break;
    }
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        // Bias by distance per head, bidirectional buckets for the encoder, unidirectional
        // (looking back only) for the decoder's self-attention.
        const int64_t span = 2 * rows - 1;
        float* enc = positions_;
        float* dec = positions_ + c.heads * span;
        ops::T5BiasByDistance(weights_.encoder_t5, c.heads, c.relative_buckets,
                              c.relative_max_distance, true, rows, enc);
        ops::T5BiasByDistance(weights_.decoder_t5, c.heads, c.relative_buckets,
                              c.relative_max_distance, false, rows, dec);
        for (StackPositions* p : {&enc_scratch_.positions, &dec_scratch_.positions}) {
          p->bias_stride = span;
          p->bias_center = rows - 1;
        }
        enc_scratch_.positions.t5_bias = enc;
        dec_scratch_.positions.t5_bias = dec;
      } else {
        for (StackPositions* p : {&enc_scratch_.positions, &dec_scratch_.positions}) {
          p->relative_scratch = relative_scratch;
          p->max_distance = c.relative_max_distance;
        }
      }
      break;
    case PositionKind::kNone:
      break;
  }
}

}  // namespace tern
