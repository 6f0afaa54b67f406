#include "runtime/kernels/reference/attention.h"

#include <cmath>
#include <limits>

#include "runtime/kernels/reference/softmax.h"

namespace tern::ref {

void ScaledDotProductAttention(const float* q, int64_t ldq, const float* k, int64_t ldk,
                               const float* v, int64_t ldv, int64_t tq, int64_t tk,
                               int64_t d_head, const AttentionMask& mask, float* scores,
                               float* out, int64_t ldo) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < tq; ++i) {
    float* row = scores + i * tk;
    const float* qi = q + i * ldq;
    for (int64_t j = 0; j < tk; ++j) {
      const bool visible =
          j < mask.key_length && (!mask.causal || j <= i + mask.causal_offset);
      if (!visible) {
        row[j] = neg_inf;
        continue;
      }
      const float* kj = k + j * ldk;
      float dot = 0.0f;
      for (int64_t c = 0; c < d_head; ++c) dot += qi[c] * kj[c];
      row[j] = dot * scale;
    }
  }
  SoftmaxRows(scores, tq, tk);
  for (int64_t i = 0; i < tq; ++i) {
    const float* a = scores + i * tk;
    float* oi = out + i * ldo;
    for (int64_t c = 0; c < d_head; ++c) oi[c] = 0.0f;
    for (int64_t j = 0; j < tk; ++j) {
      if (a[j] == 0.0f) continue;  // Masked keys contribute nothing (and may be garbage).
      const float* vj = v + j * ldv;
      for (int64_t c = 0; c < d_head; ++c) oi[c] += a[j] * vj[c];
    }
  }
}

void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo) {
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t col = h * d_head;
    ScaledDotProductAttention(q + col, ldq, k + col, ldk, v + col, ldv, tq, tk, d_head, mask,
                              scores, out + col, ldo);
  }
}

}  // namespace tern::ref
