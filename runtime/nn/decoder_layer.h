// One decoder layer (paper section 3.1) for one incremental step: masked self-attention over
// the cached keys/values of earlier positions, encoder-decoder (cross) attention over the
// encoder output's K/V (computed once per source), then the FFN; each with residual + norm.
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/model/config.h"
#include "runtime/nn/positions.h"
#include "runtime/nn/weights.h"

namespace tern {

// Per-layer caches, laid out [batch][capacity][d_model].
struct DecoderLayerCache {
  float* self_k;  // capacity = max target length
  float* self_v;
  float* cross_k;  // capacity = source length (stride `src_seq`)
  float* cross_v;
};

struct DecoderScratch {
  float* q;                  // [batch, d_model]
  float* attn;               // [batch, d_model]
  float* hidden;             // [batch, d_ff]
  float* up;                 // [batch, d_ff]: SwiGLU's up projection (null otherwise)
  float* scores;             // [max(target capacity, src_seq)]
  StackPositions positions;  // rotary / relative positions of the decoder's self-attention
  ops::Kernels kernels;      // attention, LayerNorm and activation kernels (reference by default)
};

struct DecoderStepShape {
  int64_t batch;              // decoder rows: sentences x rows_per_sentence (beam hypotheses)
  int64_t rows_per_sentence;  // row r attends to sentence r / rows_per_sentence of the source
  int64_t position;           // index of this step's token; self-attention sees 0..position
  int64_t self_capacity;      // rows per sentence in self_k / self_v
  int64_t src_seq;            // rows per sentence in cross_k / cross_v
  const int32_t* src_lengths;
};

// Cross K/V of one layer from the encoder output enc [batch, src_seq, d_model].
void ComputeCrossKeysValues(const ModelConfig& config, const DecoderLayerWeights& w,
                            const float* enc, int64_t batch, int64_t src_seq,
                            const DecoderLayerCache& cache);

// x: [batch, d_model], updated in place. Appends this step's K/V to the self-attention cache
// (keys already rotated, with rotary positions).
void DecoderLayerStep(const ModelConfig& config, const DecoderLayerWeights& w, float* x,
                      const DecoderStepShape& shape, const DecoderLayerCache& cache,
                      const DecoderScratch& s);

}  // namespace tern
