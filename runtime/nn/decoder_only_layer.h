// One layer of a decoder-only Transformer (GPT, Radford et al. 2018/2019): masked (causal)
// self-attention over a K/V cache, then the position-wise FFN, each wrapped in residual + norm
// (GPT-2: pre-LN). The paper's decoder layer without the encoder-decoder attention. LLaMA-style
// layers use the same code: RMSNorm through the shared norm (residual.h), SwiGLU through the
// feed-forward (its `up` scratch), and rotary positions applied to q and k right after their
// projections (so the cache holds rotated keys, each rotated once at its own position).
//
// Two entry points over the same weights:
//  - Prefill: many consecutive tokens of one sequence at once (a prompt). Their K/V rows go
//    straight into the sequence's cache; query i sees keys 0..start+i (causal).
//  - Step: one new token for each of `rows` sequences, each at its own position (a batch of
//    prompts of different lengths). K/V are computed for all rows in one linear call, then
//    copied to each sequence's cache row.
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/kernels/reference/rotary.h"
#include "runtime/model/config.h"
#include "runtime/nn/weights.h"

namespace tern {

struct DecoderOnlyLayerWeights {
  AttentionWeights self_attn;  // masked (causal)
  NormWeights self_attn_norm;
  FeedForwardWeights ffn;
  NormWeights ffn_norm;
};

// One layer's cache: sequence r's keys at k + r * capacity * d_model, one row per position.
struct SelfAttentionCache {
  float* k;
  float* v;
  int64_t capacity;  // positions per sequence
};

struct DecoderOnlyScratch {
  float* q;       // [rows, d_model]
  float* k;       // [rows, d_model] (Step: this step's keys before they go to the cache)
  float* v;       // [rows, d_model]
  float* attn;    // [rows, d_model]
  float* hidden;  // [rows, d_ff]
  float* up;      // [rows, d_ff], SwiGLU only (fc3's output), else null
  float* scores;  // [rows * capacity] (the reference attention's [queries, keys] block)
  ops::Kernels kernels;
  // Rotary positions: cos/sin for positions [0, capacity) (planned in the arena); null for
  // learned / sinusoidal / no positions, which rotate nothing.
  const ref::RotaryTable* rotary;
};

// x: [count, d_model] (tokens start..start+count-1 of sequence `row`), updated in place.
void DecoderOnlyLayerPrefill(const ModelConfig& config, const DecoderOnlyLayerWeights& w, float* x,
                             int64_t row, int64_t start, int64_t count,
                             const SelfAttentionCache& cache, const DecoderOnlyScratch& s);

// x: [rows, d_model], row r the token at positions[r] of sequence r, updated in place.
void DecoderOnlyLayerStep(const ModelConfig& config, const DecoderOnlyLayerWeights& w, float* x,
                          int64_t rows, const int32_t* positions, const SelfAttentionCache& cache,
                          const DecoderOnlyScratch& s);

}  // namespace tern
