// Scaled dot-product attention (paper eq. 1) and its multi-head form (section 3.2.2):
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + mask) V
//   MultiHead = Concat(head_1..head_h), head_i = Attention over columns [i*d_k, (i+1)*d_k).
// Splitting into heads and merging them back is done with strides, without copies: head h of
// a [t, d_model] matrix is the column slice starting at h * d_head with row stride ld.
#pragma once

#include <cstdint>

#include "runtime/core/fp16.h"
#include "runtime/kernels/reference/relative_position.h"

namespace tern::ref {

// Which keys a query may see. Key j is visible to query i when j < key_length and, if causal,
// j <= i + causal_offset (causal_offset = number of keys before the first query: the cache
// length during incremental decoding).
struct AttentionMask {
  int64_t key_length = 0;
  bool causal = false;
  int64_t causal_offset = 0;
};

// One head. q: [tq, d_head] stride ldq; k, v: [tk, d_head] strides ldk, ldv; out: [tq, d_head]
// stride ldo. scores: scratch of tq * tk floats. rel (may be null): relative-position terms
// (relative_position.h) of head `head`.
void ScaledDotProductAttention(const float* q, int64_t ldq, const float* k, int64_t ldk,
                               const float* v, int64_t ldv, int64_t tq, int64_t tk, int64_t d_head,
                               const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                               const RelativePositions* rel = nullptr, int64_t head = 0);
// The same over fp16 K/V (Limits::kv_cache = kFloat16): each value widened exactly to float, so
// the result is the bits of the float call on K/V holding the same (fp16-rounded) values.
void ScaledDotProductAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk,
                               const Half* v, int64_t ldv, int64_t tq, int64_t tk, int64_t d_head,
                               const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                               const RelativePositions* rel = nullptr, int64_t head = 0);

// All heads. q: [tq, heads*d_head] stride ldq, k/v [tk, kv_heads*d_head] strides ldk/ldv, out
// [tq, heads*d_head] stride ldo (heads concatenated). scores: scratch of tq * tk floats.
// rel: relative-position terms, or null. Grouped-query attention (Ainslie et al. 2023):
// kv_heads divides heads and query head h reads K/V head h / (heads / kv_heads); kv_heads =
// heads (or 0) is the paper's multi-head attention, kv_heads = 1 multi-query attention.
void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const RelativePositions* rel = nullptr, int64_t kv_heads = 0);
void MultiHeadAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const RelativePositions* rel = nullptr, int64_t kv_heads = 0);

// Which keys each row of a decoder step sees (StepAttention). Row r reads K/V sequence
// r / rows_per_sequence (beam hypotheses share their sentence's encoder K/V). With `lengths`
// (cross-attention over a padded source) the sequence has `capacity` keys of which
// lengths[sequence] are real; without (a self-attention cache) row r's position t is
// positions[r] (or `position` for every row) and it sees the min(t + 1, capacity) keys there
// (a full sliding-window ring: all of them).
struct StepKeys {
  int64_t rows_per_sequence = 1;
  const int32_t* lengths = nullptr;
  const int32_t* positions = nullptr;
  int64_t position = 0;
  int64_t capacity = 0;

  int64_t Sequence(int64_t r) const { return r / rows_per_sequence; }
  // Keys row r's call is given (tk) and those of them it may see (AttentionMask::key_length).
  int64_t Keys(int64_t r) const { return lengths != nullptr ? capacity : Visible(r); }
  int64_t Visible(int64_t r) const {
    if (lengths != nullptr) return lengths[Sequence(r)];
    const int64_t t = positions != nullptr ? positions[r] : position;
    return t < capacity ? t + 1 : capacity;
  }
};

// A decoder step's attention: `rows` single queries, row r's at q + r * ldq, over the K/V of
// sequence s = keys.Sequence(r) at k + s * sequence_stride and v + s * sequence_stride (rows
// ldk, ldv). Row r gives the same bits as MultiHeadAttention with tq = 1, tk = keys.Keys(r)
// and key_length = keys.Visible(r) (which it is, row by row); one call for the whole step lets a
// backend split rows x heads over its threads with one fork-join instead of one per row.
// scores: scratch of capacity floats.
void StepAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                   int64_t ldv, int64_t sequence_stride, const StepKeys& keys, int64_t rows,
                   int64_t heads, int64_t d_head, float* scores, float* out, int64_t ldo,
                   int64_t kv_heads = 0);
void StepAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                   int64_t ldv, int64_t sequence_stride, const StepKeys& keys, int64_t rows,
                   int64_t heads, int64_t d_head, float* scores, float* out, int64_t ldo,
                   int64_t kv_heads = 0);

// StepAttention row by row with `attention`, a kernel of MultiHeadAttention's signature: the
// reference's, or a backend's own loops for the calls it keeps on the calling thread.
template <typename Attention, typename KV>
void StepRowByRow(Attention&& attention, const float* q, int64_t ldq, const KV* k, int64_t ldk,
                  const KV* v, int64_t ldv, int64_t sequence_stride, const StepKeys& keys,
                  int64_t rows, int64_t heads, int64_t d_head, float* scores, float* out,
                  int64_t ldo, int64_t kv_heads) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = keys.Sequence(r) * sequence_stride;
    AttentionMask mask;
    mask.key_length = keys.Visible(r);
    attention(q + r * ldq, ldq, k + at, ldk, v + at, ldv, 1, keys.Keys(r), heads, d_head, mask,
              scores, out + r * ldo, ldo, nullptr, kv_heads);
  }
}

// Query heads per K/V head (1 for the paper's attention).
inline int64_t HeadGroup(int64_t heads, int64_t kv_heads) {
  return kv_heads > 0 ? heads / kv_heads : 1;
}

}  // namespace tern::ref
