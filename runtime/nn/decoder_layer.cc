#include "runtime/nn/decoder_layer.h"

#include "runtime/kernels/ops.h"
#include "runtime/nn/feed_forward.h"
#include "runtime/nn/residual.h"

namespace tern {

void ComputeCrossKeysValues(const ModelConfig& config, const DecoderLayerWeights& w,
                            const float* enc, int64_t batch, int64_t src_seq,
                            const DecoderLayerCache& cache) {
  const int64_t d = config.d_model;
  const int64_t rows = batch * src_seq;
  ops::Linear(enc, rows, d, w.cross_attn.k.weight, w.cross_attn.k.bias, cache.cross_k, d);
  ops::Linear(enc, rows, d, w.cross_attn.v.weight, w.cross_attn.v.bias, cache.cross_v, d);
}

void DecoderLayerStep(const ModelConfig& config, const DecoderLayerWeights& w, float* x,
                      const DecoderStepShape& shape, const DecoderLayerCache& cache,
                      const DecoderScratch& s) {
  const int64_t d = config.d_model;
  const int64_t batch = shape.batch;
  const int64_t t = shape.position;

  // Masked self-attention: the new token's K and V go straight into row t of each sentence's
  // cache, so the mask is simply "keys 0..t" (the future is not there yet).
  const float* in = SubLayerInput(config, w.self_attn_norm, x, batch, s.attn);
  const int64_t cache_stride = shape.self_capacity * d;
  ops::Linear(in, batch, d, w.self_attn.q.weight, w.self_attn.q.bias, s.q, d);
  ops::Linear(in, batch, d, w.self_attn.k.weight, w.self_attn.k.bias, cache.self_k + t * d,
              cache_stride);
  ops::Linear(in, batch, d, w.self_attn.v.weight, w.self_attn.v.bias, cache.self_v + t * d,
              cache_stride);
  ref::AttentionMask self_mask;
  self_mask.key_length = t + 1;
  for (int64_t b = 0; b < batch; ++b) {
    ops::MultiHeadAttention(s.q + b * d, d, cache.self_k + b * cache_stride, d,
                            cache.self_v + b * cache_stride, d, 1, t + 1, config.heads,
                            config.d_head(), self_mask, s.scores, s.attn + b * d, d);
  }
  ops::Linear(s.attn, batch, d, w.self_attn.out.weight, w.self_attn.out.bias, s.q, d);
  AddResidual(config, w.self_attn_norm, x, s.q, batch);

  // Encoder-decoder attention: queries from the decoder, keys/values from the encoder.
  in = SubLayerInput(config, w.cross_attn_norm, x, batch, s.attn);
  ops::Linear(in, batch, d, w.cross_attn.q.weight, w.cross_attn.q.bias, s.q, d);
  const int64_t src_stride = shape.src_seq * d;
  for (int64_t b = 0; b < batch; ++b) {
    // Beam hypotheses of one sentence share that sentence's encoder K/V.
    const int64_t sentence = b / shape.rows_per_sentence;
    ref::AttentionMask cross_mask;
    cross_mask.key_length = shape.src_lengths[sentence];
    ops::MultiHeadAttention(s.q + b * d, d, cache.cross_k + sentence * src_stride, d,
                            cache.cross_v + sentence * src_stride, d, 1, shape.src_seq, config.heads,
                            config.d_head(), cross_mask, s.scores, s.attn + b * d, d);
  }
  ops::Linear(s.attn, batch, d, w.cross_attn.out.weight, w.cross_attn.out.bias, s.q, d);
  AddResidual(config, w.cross_attn_norm, x, s.q, batch);

  // Position-wise FFN.
  in = SubLayerInput(config, w.ffn_norm, x, batch, s.attn);
  FeedForward(config, w.ffn, in, batch, s.hidden, s.q);
  AddResidual(config, w.ffn_norm, x, s.q, batch);
}

}  // namespace tern
