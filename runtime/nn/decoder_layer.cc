#include "runtime/nn/decoder_layer.h"

#include "runtime/kernels/ops.h"
#include "runtime/nn/feed_forward.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/residual.h"

namespace tern {

void ComputeCrossKeysValues(const ModelConfig& config, const DecoderLayerWeights& w,
                            const float* enc, int64_t batch, int64_t src_seq,
                            const DecoderLayerCache& cache) {
  const int64_t d = config.d_model;
  const int64_t rows = batch * src_seq;
  Linear(enc, rows, d, w.cross_attn.k, cache.cross_k, d);
  Linear(enc, rows, d, w.cross_attn.v, cache.cross_v, d);
}

void DecoderLayerStep(const ModelConfig& config, const DecoderLayerWeights& w, float* x,
                      const DecoderStepShape& shape, const DecoderLayerCache& cache,
                      const DecoderScratch& s) {
  const int64_t d = config.d_model;
  const int64_t batch = shape.batch;
  const int64_t t = shape.position;

  // Masked self-attention: the new token's K and V go straight into row t of each sentence's
  // cache, so the mask is simply "keys 0..t" (the future is not there yet).
  const float* in = SubLayerInput(config, s.kernels, w.self_attn_norm, x, batch, s.attn);
  const int64_t cache_stride = shape.self_capacity * d;
  Linear(in, batch, d, w.self_attn.q, s.q, d);
  Linear(in, batch, d, w.self_attn.k, cache.self_k + t * d, cache_stride);
  Linear(in, batch, d, w.self_attn.v, cache.self_v + t * d, cache_stride);
  if (s.positions.rotary != nullptr) {  // RoPE: every row's query and new key sit at position t
    ops::ApplyRotary(*s.positions.rotary, s.q, batch, d, config.heads, config.d_head(), t, 0);
    ops::ApplyRotary(*s.positions.rotary, cache.self_k + t * d, batch, cache_stride, config.heads,
                     config.d_head(), t, 0);
  }
  ref::AttentionMask self_mask;
  self_mask.key_length = t + 1;
  ref::RelativePositions terms;
  const ref::RelativePositions* rel = RelativeTerms(s.positions, w.self_attn, t, &terms);
  for (int64_t b = 0; b < batch; ++b) {
    ops::MultiHeadAttention(s.kernels, s.q + b * d, d, cache.self_k + b * cache_stride, d,
                            cache.self_v + b * cache_stride, d, 1, t + 1, config.heads,
                            config.d_head(), self_mask, s.scores, s.attn + b * d, d, rel);
  }
  Linear(s.attn, batch, d, w.self_attn.out, s.q, d);
  AddResidual(config, s.kernels, w.self_attn_norm, x, s.q, batch);

  // Encoder-decoder attention: queries from the decoder, keys/values from the encoder.
  in = SubLayerInput(config, s.kernels, w.cross_attn_norm, x, batch, s.attn);
  Linear(in, batch, d, w.cross_attn.q, s.q, d);
  const int64_t src_stride = shape.src_seq * d;
  for (int64_t b = 0; b < batch; ++b) {
    // Beam hypotheses of one sentence share that sentence's encoder K/V.
    const int64_t sentence = b / shape.rows_per_sentence;
    ref::AttentionMask cross_mask;
    cross_mask.key_length = shape.src_lengths[sentence];
    ops::MultiHeadAttention(s.kernels, s.q + b * d, d, cache.cross_k + sentence * src_stride, d,
                            cache.cross_v + sentence * src_stride, d, 1, shape.src_seq,
                            config.heads, config.d_head(), cross_mask, s.scores, s.attn + b * d, d);
  }
  Linear(s.attn, batch, d, w.cross_attn.out, s.q, d);
  AddResidual(config, s.kernels, w.cross_attn_norm, x, s.q, batch);

  // Position-wise FFN.
  in = SubLayerInput(config, s.kernels, w.ffn_norm, x, batch, s.attn);
  FeedForward(config, s.kernels, w.ffn, in, batch, s.hidden, s.up, s.q);
  AddResidual(config, s.kernels, w.ffn_norm, x, s.q, batch);
}

}  // namespace tern
