// One Transformer layer (paper section 3.1) of any stack, forward: self-attention, the
// encoder-decoder attention of an encoder-decoder's decoder layers, then the position-wise FFN,
// each wrapped in residual + norm (residual.h: post-LN as the paper, or pre-LN). The encoder,
// the decoder step of a translation model and a language model's prefill and step are the same
// layer called in two shapes:
//  - LayerForward: many queries per sequence. The encoder (a batch of sentences padded to `seq`
//    rows, each attending to its own rows) and a language model's prompt (one sequence, causal,
//    its K/V rows written into the cache after `start` earlier ones).
//  - LayerStep: one new token per row (a decoder step). Its K/V rows enter the self-attention
//    cache; with cross-attention each row attends to its sentence's encoder K/V.
// Attention is multi-head (heads query heads) over kv_heads K/V heads: grouped-query attention
// when kv_heads < heads (ref::MultiHeadAttention). Positions: absolute ones were added to the
// embeddings; rotary ones rotate q and k here (the cache keeps rotated keys); Shaw and T5 terms
// enter the self-attention scores (positions.h).
#pragma once

#include <cstdint>

#include "runtime/core/fp16.h"
#include "runtime/kernels/ops.h"
#include "runtime/model/config.h"
#include "runtime/nn/positions.h"
#include "runtime/nn/weights.h"

namespace tern {

// Scratch of a stack's layers, in the arena (rows = the most rows one call runs).
struct LayerScratch {
  float* q = nullptr;       // [rows, d_model]
  float* k = nullptr;       // [rows, d_kv]: keys on their way to a cache (LayerStep with per-row
  float* v = nullptr;       // positions or an fp16 cache) or the encoder's keys
  float* attn = nullptr;    // [rows, d_model]
  float* hidden = nullptr;  // [rows, d_ff]
  float* up = nullptr;      // [rows, d_ff]: SwiGLU's up projection (null otherwise)
  float* scores = nullptr;  // the reference attention's [queries, keys] block
  StackPositions positions;
  ops::Kernels kernels;  // attention, norm and activation kernels (reference by default)
};

// The K/V rows of one attention: sequence s's row j at k + (s * capacity + j) * d_kv. A
// self-attention cache with fewer rows than positions (a sliding window) is a ring: position t
// in row t mod capacity, so it holds exactly the last `capacity` positions, which a step attends
// to all (their order does not matter to softmax, and rotary keys carry their own positions).
// An fp16 cache (Limits::kv_cache = kFloat16: a decoder's caches, read by LayerStep, and a
// language model's, which a prompt's LayerForward fills) has its rows in hk / hv instead, laid
// out the same, and k / v null.
struct KeyValues {
  float* k = nullptr;
  float* v = nullptr;
  int64_t capacity = 0;
  Half* hk = nullptr;
  Half* hv = nullptr;
  // A decoder step computes its new K/V rows into [rows, d_kv] scratch and copies them in, where
  // the projections were not planned for this cache's row stride (a target-token budget sets
  // the capacity per call). fp16 caches always go through scratch.
  bool through_scratch = false;

  bool half() const { return hk != nullptr; }

  // Sequence s's rows alone (as sequence 0).
  KeyValues OfSequence(int64_t s, int64_t d_kv) const {
    const int64_t at = s * capacity * d_kv;
    if (half()) return KeyValues{nullptr, nullptr, capacity, hk + at, hv + at};
    return KeyValues{k + at, v + at, capacity};
  }

  // Layer i's in a stack's caches: per layer K then V, each [sequences, capacity, d_kv].
  static KeyValues OfLayer(float* caches, int64_t i, int64_t sequences, int64_t capacity,
                           int64_t d_kv) {
    const int64_t half = sequences * capacity * d_kv;
    return KeyValues{caches + 2 * i * half, caches + (2 * i + 1) * half, capacity};
  }
  static KeyValues OfLayer(Half* caches, int64_t i, int64_t sequences, int64_t capacity,
                           int64_t d_kv) {
    const int64_t part = sequences * capacity * d_kv;
    return KeyValues{nullptr, nullptr, capacity, caches + 2 * i * part,
                     caches + (2 * i + 1) * part};
  }
};

struct SequenceShape {
  int64_t sequences = 1;             // sentences (encoder) or 1 (a prompt)
  int64_t seq = 0;                   // rows per sequence in x
  const int32_t* lengths = nullptr;  // real rows of each sequence (<= seq)
  int64_t first = 0;                 // the K/V sequence of sequence 0 (a prompt: its cache row)
  int64_t start = 0;                 // keys already in the cache before row 0 (its position)
  bool causal = false;
};

// x: [sequences, seq, d_model], updated in place. Writes the rows' K/V to kv at row `start` of
// each sequence; with more than one sequence, kv must be laid out like x (capacity == seq,
// start == 0). Padded rows stay finite and are never read by real rows. An fp16 kv takes one
// sequence from start 0 (a prompt), its K/V computed in s.k / s.v ([seq, d_kv]) first.
void LayerForward(const ModelConfig& config, const LayerWeights& w, float* x,
                  const SequenceShape& shape, const KeyValues& kv, const LayerScratch& s);

struct StepShape {
  int64_t rows = 0;                    // decoder rows (sentences x beam hypotheses)
  const int32_t* positions = nullptr;  // row r's position; null: every row at `position`
  int64_t position = 0;
  // Encoder-decoder attention: row r attends to sentence r / rows_per_sentence, which has
  // src_lengths[sentence] real rows.
  int64_t rows_per_sentence = 1;
  const int32_t* src_lengths = nullptr;
};

// The encoder-decoder attention of a decoder layer: its weights and the encoder's K/V
// (capacity = the padded source length).
struct CrossAttention {
  const CrossAttentionWeights* w = nullptr;
  KeyValues kv;
};

// x: [rows, d_model], updated in place. Appends each row's K/V to its sequence of `self` (with
// one shared position straight from the projections, whose output stride is then the cache's
// row stride; with per-row positions through s.k / s.v). cross: null for a layer without
// encoder-decoder attention.
void LayerStep(const ModelConfig& config, const LayerWeights& w, float* x, const StepShape& shape,
               const KeyValues& self, const CrossAttention* cross, const LayerScratch& s);

// The cross-attention K/V of one decoder layer from the encoder output enc [batch, src_seq,
// d_model] into kv (capacity = src_seq). An fp16 kv is computed in s.k / s.v ([batch * src_seq,
// d_kv] each), then rounded into it.
void CrossKeysValues(const ModelConfig& config, const CrossAttentionWeights& w, const float* enc,
                     int64_t batch, int64_t src_seq, const KeyValues& kv, const LayerScratch& s);

}  // namespace tern
