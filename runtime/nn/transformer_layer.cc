#include "runtime/nn/transformer_layer.h"

#include <cstring>

#include "runtime/nn/feed_forward.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Output projection W^O and the residual of a self-attention whose heads are in s.attn.
void FinishAttention(const ModelConfig& c, const AttentionWeights& a, const NormWeights& norm,
                     float* x, int64_t rows, const LayerScratch& s) {
  Linear(s.attn, rows, c.d_q(), a.out, s.q, c.d_model);
  AddResidual(c, s.kernels, norm, x, s.q, rows);
}

// Position-wise FFN with its residual.
void FeedForwardBlock(const ModelConfig& c, const LayerWeights& w, float* x, int64_t rows,
                      const LayerScratch& s) {
  const float* in = SubLayerInput(c, s.kernels, w.ffn_norm, x, rows, s.attn);
  FeedForward(c, s.kernels, w.ffn, in, rows, s.hidden, s.up, s.q);
  AddResidual(c, s.kernels, w.ffn_norm, x, s.q, rows);
}

// y = x rounded to fp16, and x replaced by those values widened back (exactly): the K/V rows
// a prompt writes into an fp16 cache and attends over.
void RoundIntoHalf(const ops::Kernels& kernels, float* x, int64_t n, Half* y) {
  ops::ToHalf(kernels, x, n, y);
  for (int64_t i = 0; i < n; ++i) x[i] = ToFloat(y[i]);
}

}  // namespace

void LayerForward(const ModelConfig& c, const LayerWeights& w, float* x, const SequenceShape& shape,
                  const KeyValues& kv, const LayerScratch& s) {
  // Query heads are d_q = heads * d_head wide (d_model unless head_dim sets the head size).
  const int64_t d = c.d_model, dq = c.d_q(), d_kv = c.d_kv(), rows = shape.sequences * shape.seq;
  // Q = X W^Q, K = X W^K, V = X W^V over all rows at once; K/V go to their final place.
  const float* in = SubLayerInput(c, s.kernels, w.self_attn_norm, x, rows, s.attn);
  // An fp16 cache (prompts from position 0) takes the rows through s.k / s.v:
  // rounded into the cache, and the prompt attends over the rounded values, as its later steps
  // will (so prefilling a prompt and stepping through it give the same keys).
  const bool half = kv.half();
  float* const k_rows = half ? s.k : kv.k + (shape.first * kv.capacity + shape.start) * d_kv;
  float* const v_rows = half ? s.v : kv.v + (shape.first * kv.capacity + shape.start) * d_kv;
  Linears(
      in, rows, d,
      {{&w.self_attn.q, s.q, dq}, {&w.self_attn.k, k_rows, d_kv}, {&w.self_attn.v, v_rows, d_kv}});
  ref::RelativePositions terms;
  const ref::RelativePositions* rel = RelativeTerms(s.positions, w.self_attn, shape.start, &terms);
  for (int64_t b = 0; b < shape.sequences; ++b) {
    const int64_t len = shape.lengths[b];
    float* q = s.q + b * shape.seq * dq;
    // Keys 0..start+len-1 of this sequence (with an fp16 cache its rows in scratch, start 0).
    float* k = half ? s.k + b * shape.seq * d_kv : kv.k + (shape.first + b) * kv.capacity * d_kv;
    float* v = half ? s.v + b * shape.seq * d_kv : kv.v + (shape.first + b) * kv.capacity * d_kv;
    if (s.positions.rotary != nullptr) {  // RoPE: row i of each sequence at position start + i
      ops::ApplyRotary(*s.positions.rotary, q, len, dq, c.heads, c.d_head(), shape.start, 1);
      ops::ApplyRotary(*s.positions.rotary, k + shape.start * d_kv, len, d_kv, c.kv_head_count(),
                       c.d_head(), shape.start, 1);
    }
    if (half) {
      const int64_t at = (shape.first + b) * kv.capacity * d_kv;
      RoundIntoHalf(s.kernels, k, len * d_kv, kv.hk + at);
      RoundIntoHalf(s.kernels, v, len * d_kv, kv.hv + at);
    }
    // Keys 0..start+len-1; with the causal mask query i (position start+i) sees 0..start+i.
    ref::AttentionMask mask;
    mask.key_length = shape.start + len;
    mask.causal = shape.causal;
    mask.causal_offset = shape.start;
    float* attn = s.attn + b * shape.seq * dq;
    ops::MultiHeadAttention(s.kernels, q, dq, k, d_kv, v, d_kv, len, shape.start + len, c.heads,
                            c.d_head(), mask, s.scores, attn, dq, rel, c.kv_head_count());
    // Padded rows: zeros, so everything downstream stays finite.
    std::memset(attn + len * dq, 0, static_cast<size_t>((shape.seq - len) * dq) * sizeof(float));
  }
  FinishAttention(c, w.self_attn, w.self_attn_norm, x, rows, s);
  FeedForwardBlock(c, w, x, rows, s);
}

void LayerStep(const ModelConfig& c, const LayerWeights& w, float* x, const StepShape& shape,
               const KeyValues& self, const CrossAttention* cross, const LayerScratch& s) {
  const int64_t d = c.d_model, dq = c.d_q(), d_kv = c.d_kv(), rows = shape.rows;
  const int64_t stride = self.capacity * d_kv;  // one sequence's cache
  const ref::RotaryTable* rotary = s.positions.rotary;
  const float* in = SubLayerInput(c, s.kernels, w.self_attn_norm, x, rows, s.attn);
  if (shape.positions == nullptr && !self.half() && !self.through_scratch) {
    // One position t for every row: the new K/V rows go straight into row t (mod a window's
    // ring) of each sequence's cache, so the causal mask is simply "the keys there" (the
    // future is not there yet).
    const int64_t t = shape.position;
    const int64_t slot = t % self.capacity;
    Linears(in, rows, d,
            {{&w.self_attn.q, s.q, dq},
             {&w.self_attn.k, self.k + slot * d_kv, stride},
             {&w.self_attn.v, self.v + slot * d_kv, stride}});
    if (rotary != nullptr) {
      ops::ApplyRotary(*rotary, s.q, rows, dq, c.heads, c.d_head(), t, 0);
      ops::ApplyRotary(*rotary, self.k + slot * d_kv, rows, stride, c.kv_head_count(), c.d_head(),
                       t, 0);
    }
  } else {
    // Sequences at different positions (a batch of prompts of different lengths): the rows
    // are not evenly strided in the cache, one copy each (small next to the projections). An
    // fp16 cache takes each row rounded on the way in, wherever it stands.
    Linears(in, rows, d,
            {{&w.self_attn.q, s.q, dq}, {&w.self_attn.k, s.k, d_kv}, {&w.self_attn.v, s.v, d_kv}});
    const size_t row_bytes = static_cast<size_t>(d_kv) * sizeof(float);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = shape.positions != nullptr ? shape.positions[r] : shape.position;
      if (rotary != nullptr) {
        ops::ApplyRotary(*rotary, s.q + r * dq, 1, dq, c.heads, c.d_head(), t, 0);
        ops::ApplyRotary(*rotary, s.k + r * d_kv, 1, d_kv, c.kv_head_count(), c.d_head(), t, 0);
      }
      const int64_t at = r * stride + (t % self.capacity) * d_kv;
      if (self.half()) {
        ops::ToHalf(s.kernels, s.k + r * d_kv, d_kv, self.hk + at);
        ops::ToHalf(s.kernels, s.v + r * d_kv, d_kv, self.hv + at);
      } else {
        std::memcpy(self.k + at, s.k + r * d_kv, row_bytes);
        std::memcpy(self.v + at, s.v + r * d_kv, row_bytes);
      }
    }
  }
  // Row r attends to its own cache's keys 0..t (a full ring: all of it).
  ref::StepKeys keys;
  keys.positions = shape.positions;
  keys.position = shape.position;
  keys.capacity = self.capacity;
  ref::RelativePositions terms;
  if (self.half()) {  // (fp16 caches are refused with relative positions: Prepare)
    ops::StepAttention(s.kernels, s.q, dq, self.hk, d_kv, self.hv, d_kv, stride, keys, rows,
                       c.heads, c.d_head(), s.scores, s.attn, dq, c.kv_head_count());
  } else if (RelativeTerms(s.positions, w.self_attn, 0, &terms) == nullptr) {
    // The whole step in one call (a backend may split its rows x heads over threads).
    ops::StepAttention(s.kernels, s.q, dq, self.k, d_kv, self.v, d_kv, stride, keys, rows, c.heads,
                       c.d_head(), s.scores, s.attn, dq, c.kv_head_count());
  } else {
    for (int64_t r = 0; r < rows; ++r) {  // relative terms depend on each row's position
      const int64_t t = shape.positions != nullptr ? shape.positions[r] : shape.position;
      ref::AttentionMask mask;
      mask.key_length = keys.Visible(r);
      const ref::RelativePositions* rel = RelativeTerms(s.positions, w.self_attn, t, &terms);
      ops::MultiHeadAttention(s.kernels, s.q + r * dq, dq, self.k + r * stride, d_kv,
                              self.v + r * stride, d_kv, 1, keys.Keys(r), c.heads, c.d_head(), mask,
                              s.scores, s.attn + r * dq, dq, rel, c.kv_head_count());
    }
  }
  FinishAttention(c, w.self_attn, w.self_attn_norm, x, rows, s);

  if (cross != nullptr) {
    // Encoder-decoder attention: queries from the decoder, keys/values from the encoder; beam
    // hypotheses of one sentence share that sentence's encoder K/V.
    const KeyValues& kv = cross->kv;
    in = SubLayerInput(c, s.kernels, cross->w->norm, x, rows, s.attn);
    Linear(in, rows, d, cross->w->attn.q, s.q, dq);
    ref::StepKeys keys;
    keys.rows_per_sequence = shape.rows_per_sentence;
    keys.lengths = shape.src_lengths;
    keys.capacity = kv.capacity;
    if (kv.half()) {
      ops::StepAttention(s.kernels, s.q, dq, kv.hk, d_kv, kv.hv, d_kv, kv.capacity * d_kv, keys,
                         rows, c.heads, c.d_head(), s.scores, s.attn, dq, c.kv_head_count());
    } else {
      ops::StepAttention(s.kernels, s.q, dq, kv.k, d_kv, kv.v, d_kv, kv.capacity * d_kv, keys, rows,
                         c.heads, c.d_head(), s.scores, s.attn, dq, c.kv_head_count());
    }
    FinishAttention(c, cross->w->attn, cross->w->norm, x, rows, s);
  }
  FeedForwardBlock(c, w, x, rows, s);
}

void CrossKeysValues(const ModelConfig& c, const CrossAttentionWeights& w, const float* enc,
                     int64_t batch, int64_t src_seq, const KeyValues& kv, const LayerScratch& s) {
  const int64_t rows = batch * src_seq;
  if (!kv.half()) {
    Linears(enc, rows, c.d_model, {{&w.attn.k, kv.k, c.d_kv()}, {&w.attn.v, kv.v, c.d_kv()}});
    return;
  }
  Linears(enc, rows, c.d_model, {{&w.attn.k, s.k, c.d_kv()}, {&w.attn.v, s.v, c.d_kv()}});
  ops::ToHalf(s.kernels, s.k, rows * c.d_kv(), kv.hk);
  ops::ToHalf(s.kernels, s.v, rows * c.d_kv(), kv.hv);
}

}  // namespace tern
