#include "runtime/models/positions.h"

#include "runtime/kernels/ops.h"
#include "runtime/memory/planner.h"

namespace tern {

namespace {

// Rotated dimensions per head (config 0: all of d_head).
int32_t RotaryDims(const ModelConfig& c) { return c.rotary_dim > 0 ? c.rotary_dim : c.d_head(); }

}  // namespace

size_t PositionFloats(const ModelConfig& c, int64_t rows_signed) {
  const size_t rows = static_cast<size_t>(rows_signed);
  const size_t d = static_cast<size_t>(c.d_model);
  switch (c.position) {
    case PositionKind::kSinusoidal:
      return CheckedMul(rows, d);
    case PositionKind::kLearned:
      return c.architecture == Architecture::kDecoderOnly ? 0 : CheckedMul(2 * rows, d);
    case PositionKind::kRotary:
      return CheckedMul(rows, static_cast<size_t>(RotaryDims(c)));
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        return CheckedMul(2 * static_cast<size_t>(c.heads), 2 * rows - 1);
      }
      return 0;
    case PositionKind::kNone:
    case PositionKind::kRotaryScaled:  // the stored form only: loaded as kRotary
      return 0;
  }
  return 0;
}

void FillPositions(const ModelConfig& c, const ModelWeights& w, int64_t rows, float* tables,
                   float* shaw_scratch, PositionTables* out) {
  *out = PositionTables();
  const int64_t d = c.d_model;
  switch (c.position) {
    case PositionKind::kSinusoidal:
      // Row t of the table is the t-th token's: position t + FirstPosition (fairseq: pad + 1).
      ops::SinusoidalPositions(ref::FirstPosition(c.sinusoid_layout, c.pad_id), rows, d,
                               c.sinusoid_layout, tables);
      out->encoder_rows = out->decoder_rows = tables;
      break;
    case PositionKind::kLearned: {
      if (c.architecture == Architecture::kDecoderOnly) break;  // looked up per token
      // Rows 0..rows-1 of each table, dequantized once (the tables may be int8 like embeddings).
      float* enc = tables;
      float* dec = tables + rows * d;
      for (int32_t p = 0; p < rows; ++p) {
        ops::Embedding(w.encoder_learned, &p, 1, 1.0f, enc + p * d);
        ops::Embedding(w.decoder_learned, &p, 1, 1.0f, dec + p * d);
      }
      out->encoder_rows = enc;
      out->decoder_rows = dec;
      break;
    }
    case PositionKind::kRotary: {
      out->rotary.rotary_dim = RotaryDims(c);
      float* cos = tables;
      float* sin = tables + rows * (out->rotary.rotary_dim / 2);
      ops::RotaryTables(rows, out->rotary.rotary_dim, RotaryFrequenciesOf(c), cos, sin);
      out->rotary.cos = cos;
      out->rotary.sin = sin;
      out->encoder.rotary = out->decoder.rotary = &out->rotary;
      break;
    }
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        // Bias by distance per head, bidirectional buckets for the encoder, unidirectional
        // (looking back only) for the decoder's self-attention.
        const int64_t span = 2 * rows - 1;
        float* enc = tables;
        float* dec = tables + c.heads * span;
        ops::T5BiasByDistance(w.encoder_t5, c.heads, c.relative_buckets, c.relative_max_distance,
                              true, rows, enc);
        ops::T5BiasByDistance(w.decoder_t5, c.heads, c.relative_buckets, c.relative_max_distance,
                              false, rows, dec);
        out->encoder.relative.bias = enc;
        out->decoder.relative.bias = dec;
        for (StackPositions* p : {&out->encoder, &out->decoder}) {
          p->relative.bias_stride = span;
          p->relative.bias_center = rows - 1;
        }
      } else {
        for (StackPositions* p : {&out->encoder, &out->decoder}) {
          p->relative.scratch = shaw_scratch;
          p->relative.max_distance = c.relative_max_distance;
        }
      }
      break;
    case PositionKind::kNone:
    case PositionKind::kRotaryScaled:  // the stored form only: loaded as kRotary
      break;
  }
}

}  // namespace tern
