// One encoder layer (paper section 3.1): multi-head self-attention, then the FFN, each wrapped
// in residual + LayerNorm. Runs a batch of sentences padded to `seq` rows each; padded keys are
// masked, padded rows are kept finite and never read by real rows.
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/model/config.h"
#include "runtime/nn/positions.h"
#include "runtime/nn/weights.h"

namespace tern {

struct EncoderScratch {
  float* q;                  // [batch*seq, d_model]
  float* k;                  // [batch*seq, d_model]
  float* v;                  // [batch*seq, d_model]
  float* attn;               // [batch*seq, d_model]
  float* hidden;             // [batch*seq, d_ff]
  float* up;                 // [batch*seq, d_ff]: SwiGLU's up projection (null otherwise)
  float* scores;             // [seq*seq]
  StackPositions positions;  // rotary / relative positions of the encoder's self-attention
  ops::Kernels kernels;      // attention, LayerNorm and activation kernels (reference by default)
};

// x: [batch, seq, d_model], updated in place. lengths[b] <= seq real tokens in sentence b.
void EncoderLayerForward(const ModelConfig& config, const EncoderLayerWeights& w, float* x,
                         int64_t batch, int64_t seq, const int32_t* lengths,
                         const EncoderScratch& s);

}  // namespace tern
