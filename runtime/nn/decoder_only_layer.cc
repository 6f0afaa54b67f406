#include "runtime/nn/decoder_only_layer.h"

#include <cstring>

#include "runtime/kernels/ops.h"
#include "runtime/nn/feed_forward.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Output projection W^O, residual, then the FFN sub-layer: shared by both entry points.
void FinishLayer(const ModelConfig& config, const DecoderOnlyLayerWeights& w, float* x,
                 int64_t rows, const DecoderOnlyScratch& s) {
  const int64_t d = config.d_model;
  Linear(s.attn, rows, d, w.self_attn.out, s.q, d);
  AddResidual(config, s.kernels, w.self_attn_norm, x, s.q, rows);
  const float* in = SubLayerInput(config, s.kernels, w.ffn_norm, x, rows, s.attn);
  FeedForward(config, s.kernels, w.ffn, in, rows, s.hidden, s.up, s.q);
  AddResidual(config, s.kernels, w.ffn_norm, x, s.q, rows);
}

}  // namespace

void DecoderOnlyLayerPrefill(const ModelConfig& config, const DecoderOnlyLayerWeights& w, float* x,
                             int64_t row, int64_t start, int64_t count,
                             const SelfAttentionCache& cache, const DecoderOnlyScratch& s) {
  const int64_t d = config.d_model;
  float* k = cache.k + (row * cache.capacity + start) * d;
  float* v = cache.v + (row * cache.capacity + start) * d;
  const float* in = SubLayerInput(config, s.kernels, w.self_attn_norm, x, count, s.attn);
  Linear(in, count, d, w.self_attn.q, s.q, d);
  Linear(in, count, d, w.self_attn.k, k, d);
  Linear(in, count, d, w.self_attn.v, v, d);
  if (s.rotary != nullptr) {
    // RoPE: the prompt's tokens sit at start..start+count-1. Keys are rotated where they lie in
    // the cache, before any query reads them.
    ops::ApplyRotary(*s.rotary, s.q, count, d, config.heads, config.d_head(), start, 1);
    ops::ApplyRotary(*s.rotary, k, count, d, config.heads, config.d_head(), start, 1);
  }
  // Keys 0..start+count-1 of this sequence; query i (position start+i) sees 0..start+i.
  ref::AttentionMask mask;
  mask.key_length = start + count;
  mask.causal = true;
  mask.causal_offset = start;
  const float* k0 = cache.k + row * cache.capacity * d;
  const float* v0 = cache.v + row * cache.capacity * d;
  ops::MultiHeadAttention(s.kernels, s.q, d, k0, d, v0, d, count, start + count, config.heads,
                          config.d_head(), mask, s.scores, s.attn, d);
  FinishLayer(config, w, x, count, s);
}

void DecoderOnlyLayerStep(const ModelConfig& config, const DecoderOnlyLayerWeights& w, float* x,
                          int64_t rows, const int32_t* positions, const SelfAttentionCache& cache,
                          const DecoderOnlyScratch& s) {
  const int64_t d = config.d_model;
  const float* in = SubLayerInput(config, s.kernels, w.self_attn_norm, x, rows, s.attn);
  Linear(in, rows, d, w.self_attn.q, s.q, d);
  Linear(in, rows, d, w.self_attn.k, s.k, d);
  Linear(in, rows, d, w.self_attn.v, s.v, d);
  const size_t row_bytes = static_cast<size_t>(d) * sizeof(float);
  for (int64_t r = 0; r < rows; ++r) {
    // Sequences sit at different positions, so the new K/V rows are not evenly strided in the
    // cache: one copy each (d floats, small next to the projections that made them).
    const int64_t t = positions[r];
    if (s.rotary != nullptr) {
      // RoPE at this row's own position: its query, and its key before it enters the cache.
      ops::ApplyRotary(*s.rotary, s.q + r * d, 1, d, config.heads, config.d_head(), t, 0);
      ops::ApplyRotary(*s.rotary, s.k + r * d, 1, d, config.heads, config.d_head(), t, 0);
    }
    float* k = cache.k + (r * cache.capacity + t) * d;
    float* v = cache.v + (r * cache.capacity + t) * d;
    std::memcpy(k, s.k + r * d, row_bytes);
    std::memcpy(v, s.v + r * d, row_bytes);
    // The cache holds positions 0..t only: "keys 0..t" is the causal mask.
    ref::AttentionMask mask;
    mask.key_length = t + 1;
    ops::MultiHeadAttention(s.kernels, s.q + r * d, d, cache.k + r * cache.capacity * d, d,
                            cache.v + r * cache.capacity * d, d, 1, t + 1, config.heads,
                            config.d_head(), mask, s.scores, s.attn + r * d, d);
  }
  FinishLayer(config, w, x, rows, s);
}

}  // namespace tern
