// Scaled dot-product attention (paper eq. 1) and its multi-head form (section 3.2.2):
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + mask) V
//   MultiHead = Concat(head_1..head_h), head_i = Attention over columns [i*d_k, (i+1)*d_k).
// Splitting into heads and merging them back is done with strides, without copies: head h of
// a [t, d_model] matrix is the column slice starting at h * d_head with row stride ld.
#pragma once

#include <cstdint>

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

// All heads. q: [tq, heads*d_head] stride ldq, k/v [tk, kv_heads*d_head] strides ldk/ldv, out
// [tq, heads*d_head] stride ldo (heads concatenated). scores: scratch of tq * tk floats.
// rel: relative-position terms, or null. Grouped-query attention (Ainslie et al. 2023):
// kv_heads divides heads and query head h reads K/V head h / (heads / kv_heads); kv_heads =
// heads (or 0) is the paper's multi-head attention, kv_heads = 1 multi-query attention.
void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const RelativePositions* rel = nullptr, int64_t kv_heads = 0);

// Query heads per K/V head (1 for the paper's attention).
inline int64_t HeadGroup(int64_t heads, int64_t kv_heads) {
  return kv_heads > 0 ? heads / kv_heads : 1;
}

}  // namespace tern::ref
