#include "runtime/nn/encoder_layer.h"

#include <cstring>

#include "runtime/kernels/ops.h"
#include "runtime/nn/feed_forward.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/residual.h"

namespace tern {

void EncoderLayerForward(const ModelConfig& config, const EncoderLayerWeights& w, float* x,
                         int64_t batch, int64_t seq, const int32_t* lengths,
                         const EncoderScratch& s) {
  const int64_t d = config.d_model;
  const int64_t rows = batch * seq;

  // Self-attention: Q = X W^Q, K = X W^K, V = X W^V over all rows at once.
  const float* in = SubLayerInput(config, s.kernels, w.self_attn_norm, x, rows, s.attn);
  Linear(in, rows, d, w.self_attn.q, s.q, d);
  Linear(in, rows, d, w.self_attn.k, s.k, d);
  Linear(in, rows, d, w.self_attn.v, s.v, d);
  ref::RelativePositions terms;
  const ref::RelativePositions* rel = RelativeTerms(s.positions, w.self_attn, 0, &terms);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lengths[b];
    const int64_t base = b * seq * d;
    if (s.positions.rotary != nullptr) {  // RoPE: token i of each sentence at position i
      ops::ApplyRotary(*s.positions.rotary, s.q + base, len, d, config.heads, config.d_head(), 0,
                       1);
      ops::ApplyRotary(*s.positions.rotary, s.k + base, len, d, config.heads, config.d_head(), 0,
                       1);
    }
    ref::AttentionMask mask;
    mask.key_length = len;
    ops::MultiHeadAttention(s.kernels, s.q + base, d, s.k + base, d, s.v + base, d, len, len,
                            config.heads, config.d_head(), mask, s.scores, s.attn + base, d, rel);
    // Padded rows: zeros, so everything downstream stays finite.
    std::memset(s.attn + base + len * d, 0, static_cast<size_t>((seq - len) * d) * sizeof(float));
  }
  Linear(s.attn, rows, d, w.self_attn.out, s.q, d);
  AddResidual(config, s.kernels, w.self_attn_norm, x, s.q, rows);

  // Position-wise FFN.
  in = SubLayerInput(config, s.kernels, w.ffn_norm, x, rows, s.attn);
  FeedForward(config, s.kernels, w.ffn, in, rows, s.hidden, s.up, s.q);
  AddResidual(config, s.kernels, w.ffn_norm, x, s.q, rows);
}

}  // namespace tern
