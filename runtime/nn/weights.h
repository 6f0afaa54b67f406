// Where each learned parameter of a block lives: views into the model file, resolved once at
// prepare by the block's own description (describe.h). Names follow the paper (W^Q, W^K, W^V,
// W^O; W1, W2 of the FFN).
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"
#include "runtime/kernels/ops.h"

namespace tern {

struct LinearWeights {
  WeightView weight;            // [out, in]
  const float* bias = nullptr;  // [out] or null
  // The backend's record of this layer (in the arena): its XNNPACK operator, or none (the
  // vectorizable loops run it); null on the reference backend (the reference kernel).
  LinearKernel* kernel = nullptr;
};

struct NormWeights {
  const float* gamma = nullptr;  // [d_model]
  const float* beta = nullptr;   // [d_model] or null
};

struct AttentionWeights {
  // W^Q [heads * d_head, d], W^K and W^V [kv_heads * d_head, d] (grouped-query attention:
  // fewer K/V heads than query heads), W^O [d, heads * d_head].
  LinearWeights q, k, v, out;
  // Shaw et al. relative positions (self-attention only): a^K, a^V [2k+1, d_head], or null.
  const float* relative_key = nullptr;
  const float* relative_value = nullptr;
};

struct FeedForwardWeights {
  LinearWeights fc1, fc2;  // W1 [d_ff, d], W2 [d, d_ff]
  LinearWeights fc3;       // SwiGLU's up projection W3 [d_ff, d] (unused otherwise)
};

// One Transformer layer of any stack: self-attention (bidirectional in the encoder, causal in
// a decoder) and the FFN, each with its norm.
struct LayerWeights {
  AttentionWeights self_attn;
  NormWeights self_attn_norm;
  FeedForwardWeights ffn;
  NormWeights ffn_norm;
};

// The encoder-decoder attention of an encoder-decoder's decoder layers: Q from the decoder,
// K/V from the encoder output.
struct CrossAttentionWeights {
  AttentionWeights attn;
  NormWeights norm;
};

// A decoder layer of an encoder-decoder (the arena holds one record per layer).
struct DecoderLayerWeights {
  LayerWeights layer;
  CrossAttentionWeights cross;
};

// A layer's linear map y = x W^T + b through the kernel prepare chose for it.
inline void Linear(const float* x, int64_t m, int64_t ldx, const LinearWeights& w, float* y,
                   int64_t ldy) {
  ops::Linear(x, m, ldx, w.weight, w.bias, w.kernel, y, ldy);
}

// One output of Linears: layer w writes y (row stride ldy).
struct LinearOutput {
  const LinearWeights* w;
  float* y;
  int64_t ldy;
};

// Linear for N layers that read the same x (Q, K and V; a gated FFN's W1 and W3), with the same
// outputs as N Linear calls: on XNNPACK's backend x is converted once and every layer's parts
// run in one fork-join (ops::Linears).
template <int N>
inline void Linears(const float* x, int64_t m, int64_t ldx, const LinearOutput (&outputs)[N]) {
  static_assert(N >= 1 && N <= ops::kMaxLinearGroup, "ops::Linears takes up to 3 layers");
  ops::LinearTarget targets[N];
  for (int i = 0; i < N; ++i) {
    const LinearWeights& w = *outputs[i].w;
    targets[i] = ops::LinearTarget{&w.weight, w.bias, w.kernel, outputs[i].y, outputs[i].ldy};
  }
  ops::Linears(x, m, ldx, targets, N);
}

}  // namespace tern
