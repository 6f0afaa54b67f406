// Where each learned parameter of a layer lives: views into the model file, resolved once at
// prepare. Names follow the paper (W^Q, W^K, W^V, W^O; W1, W2 of the FFN).
#pragma once

#include "runtime/core/tensor.h"

namespace tern {

namespace xnn {
struct LinearKernel;
}  // namespace xnn

struct LinearWeights {
  WeightView weight;            // [out, in]
  const float* bias = nullptr;  // [out] or null
  // The XNNPACK operator prepare made for this layer (in the arena), or null: reference kernel.
  xnn::LinearKernel* kernel = nullptr;
};

struct NormWeights {
  const float* gamma = nullptr;  // [d_model]
  const float* beta = nullptr;   // [d_model] or null
};

struct AttentionWeights {
  LinearWeights q, k, v, out;  // W^Q, W^K, W^V, W^O
  // Shaw et al. relative positions (self-attention only): a^K, a^V [2k+1, d_head], or null.
  const float* relative_key = nullptr;
  const float* relative_value = nullptr;
};

struct FeedForwardWeights {
  LinearWeights fc1, fc2;  // W1 [d_ff, d], W2 [d, d_ff]
  LinearWeights fc3;       // SwiGLU's up projection W3 [d_ff, d] (unused otherwise)
};

struct EncoderLayerWeights {
  AttentionWeights self_attn;
  NormWeights self_attn_norm;
  FeedForwardWeights ffn;
  NormWeights ffn_norm;
};

struct DecoderLayerWeights {
  AttentionWeights self_attn;  // masked (causal)
  NormWeights self_attn_norm;
  AttentionWeights cross_attn;  // Q from the decoder, K/V from the encoder output
  NormWeights cross_attn_norm;
  FeedForwardWeights ffn;
  NormWeights ffn_norm;
};

}  // namespace tern
