#include "runtime/kernels/reference/attention.h"

#include <cmath>
#include <limits>

#include "runtime/core/fp16.h"
#include "runtime/kernels/reference/softmax.h"

namespace tern::ref {

namespace {

// The kernels below for K/V of either element type (float, or fp16 caches: Half), each value
// read through ToFloat, which is exact: halves give the bits floats holding the same values do.
// A K or V row (or a part of it) as floats: float rows as they are, fp16 ones widened into buf.
// Both element types then run the very same float loops below, so that a compiler's choices
// (contracting a multiply and an add into an FMA: AArch64 does) are the same for both and
// halves give the bits of floats of the same values.
constexpr int64_t kChunk = 64;
inline const float* Floats(const float* x, int64_t, float*) { return x; }
inline const float* Floats(const Half* x, int64_t n, float* buf) {
  for (int64_t i = 0; i < n; ++i) buf[i] = ToFloat(x[i]);
  return buf;
}

template <typename KV>
void Attend(const float* q, int64_t ldq, const KV* k, int64_t ldk, const KV* v, int64_t ldv,
            int64_t tq, int64_t tk, int64_t d_head, const AttentionMask& mask, float* scores,
            float* out, int64_t ldo, const RelativePositions* rel, int64_t head) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const bool shaw = rel != nullptr && rel->shaw_key != nullptr;
  const bool bias = rel != nullptr && rel->bias != nullptr;
  const int64_t span = shaw ? 2 * rel->max_distance + 1 : 0;
  for (int64_t i = 0; i < tq; ++i) {
    float* row = scores + i * tk;
    const float* qi = q + i * ldq;
    const int64_t position = rel != nullptr ? rel->query_position + i : i;
    if (shaw) {  // q_i . a^K_r for every clipped distance r: the key term of e_ij.
      for (int64_t r = 0; r < span; ++r) {
        const float* a = rel->shaw_key + r * d_head;
        float dot = 0.0f;
        for (int64_t c = 0; c < d_head; ++c) dot += qi[c] * a[c];
        rel->scratch[r] = dot;
      }
    }
    for (int64_t j = 0; j < tk; ++j) {
      const bool visible = j < mask.key_length && (!mask.causal || j <= i + mask.causal_offset);
      if (!visible) {
        row[j] = neg_inf;
        continue;
      }
      const KV* kj = k + j * ldk;
      float dot = 0.0f;
      float buf[kChunk];
      for (int64_t c0 = 0; c0 < d_head; c0 += kChunk) {
        const int64_t n = d_head - c0 < kChunk ? d_head - c0 : kChunk;
        const float* kc = Floats(kj + c0, n, buf);
        for (int64_t c = 0; c < n; ++c) dot += qi[c0 + c] * kc[c];
      }
      if (shaw) dot += rel->scratch[ShawIndex(j - position, rel->max_distance)];
      row[j] = dot * scale;
      if (bias) row[j] += rel->bias[head * rel->bias_stride + (j - position) + rel->bias_center];
    }
  }
  SoftmaxRows(scores, tq, tk);
  for (int64_t i = 0; i < tq; ++i) {
    const float* a = scores + i * tk;
    float* oi = out + i * ldo;
    for (int64_t c = 0; c < d_head; ++c) oi[c] = 0.0f;
    if (shaw) {
      for (int64_t r = 0; r < span; ++r) rel->scratch[r] = 0.0f;
    }
    const int64_t position = rel != nullptr ? rel->query_position + i : i;
    for (int64_t j = 0; j < tk; ++j) {
      if (a[j] == 0.0f) continue;  // Masked keys contribute nothing (and may be garbage).
      const KV* vj = v + j * ldv;
      float buf[kChunk];
      for (int64_t c0 = 0; c0 < d_head; c0 += kChunk) {
        const int64_t n = d_head - c0 < kChunk ? d_head - c0 : kChunk;
        const float* vc = Floats(vj + c0, n, buf);
        for (int64_t c = 0; c < n; ++c) oi[c0 + c] += a[j] * vc[c];
      }
      if (shaw) rel->scratch[ShawIndex(j - position, rel->max_distance)] += a[j];
    }
    if (shaw) {  // sum_j alpha_ij a^V_clip(j-i), grouped by clipped distance.
      for (int64_t r = 0; r < span; ++r) {
        const float w = rel->scratch[r];
        if (w == 0.0f) continue;
        const float* av = rel->shaw_value + r * d_head;
        for (int64_t c = 0; c < d_head; ++c) oi[c] += w * av[c];
      }
    }
  }
}

template <typename KV>
void AllHeads(const float* q, int64_t ldq, const KV* k, int64_t ldk, const KV* v, int64_t ldv,
              int64_t tq, int64_t tk, int64_t heads, int64_t d_head, const AttentionMask& mask,
              float* scores, float* out, int64_t ldo, const RelativePositions* rel,
              int64_t kv_heads) {
  const int64_t group = HeadGroup(heads, kv_heads);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t col = h * d_head;
    const int64_t kv = (h / group) * d_head;  // the K/V head this query head shares
    Attend(q + col, ldq, k + kv, ldk, v + kv, ldv, tq, tk, d_head, mask, scores, out + col, ldo,
           rel, h);
  }
}

}  // namespace

void ScaledDotProductAttention(const float* q, int64_t ldq, const float* k, int64_t ldk,
                               const float* v, int64_t ldv, int64_t tq, int64_t tk, int64_t d_head,
                               const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                               const RelativePositions* rel, int64_t head) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, d_head, mask, scores, out, ldo, rel, head);
}

void ScaledDotProductAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk,
                               const Half* v, int64_t ldv, int64_t tq, int64_t tk, int64_t d_head,
                               const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                               const RelativePositions* rel, int64_t head) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, d_head, mask, scores, out, ldo, rel, head);
}

void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const RelativePositions* rel, int64_t kv_heads) {
  AllHeads(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

void MultiHeadAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const RelativePositions* rel, int64_t kv_heads) {
  AllHeads(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

void StepAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                   int64_t ldv, int64_t sequence_stride, const StepKeys& keys, int64_t rows,
                   int64_t heads, int64_t d_head, float* scores, float* out, int64_t ldo,
                   int64_t kv_heads) {
  StepRowByRow(AllHeads<float>, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head,
               scores, out, ldo, kv_heads);
}

void StepAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                   int64_t ldv, int64_t sequence_stride, const StepKeys& keys, int64_t rows,
                   int64_t heads, int64_t d_head, float* scores, float* out, int64_t ldo,
                   int64_t kv_heads) {
  StepRowByRow(AllHeads<Half>, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head,
               scores, out, ldo, kv_heads);
}

}  // namespace tern::ref
