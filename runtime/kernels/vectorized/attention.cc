#include "runtime/kernels/vectorized/attention.h"

#include <cmath>

#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int kLanes = 16;

inline float Dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

inline float Max(const float* x, int64_t n) {
  float acc[kLanes];
  for (int l = 0; l < kLanes; ++l) acc[l] = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] = x[i + l] > acc[l] ? x[i + l] : acc[l];
  }
  float max = -INFINITY;
  for (int l = 0; l < kLanes; ++l) max = acc[l] > max ? acc[l] : max;
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// x[i] = e^(x[i] - max), returning their sum.
inline float ExpSum(float* x, int64_t n, float max) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

// out[0, n) += a * x[0, n)
inline void Axpy(float a, const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += a * x[i];
}

}  // namespace

TERN_VECTOR_CLONES
void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel, int64_t kv_heads) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(d_head));
  const int64_t group = ref::HeadGroup(heads, kv_heads);
  const bool shaw = rel != nullptr && rel->shaw_key != nullptr;
  const int64_t span = shaw ? 2 * rel->max_distance + 1 : 0;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t col = h * d_head;
    const int64_t kv = (h / group) * d_head;  // grouped-query attention: the shared K/V head
    for (int64_t i = 0; i < tq; ++i) {
      // Keys [0, visible) are the ones query i may see.
      int64_t visible = mask.key_length < tk ? mask.key_length : tk;
      if (mask.causal && i + mask.causal_offset + 1 < visible) visible = i + mask.causal_offset + 1;
      float* oi = out + i * ldo + col;
      for (int64_t c = 0; c < d_head; ++c) oi[c] = 0.0f;
      if (visible <= 0) continue;  // Fully masked: zeros, as the reference gives.
      const float* qi = q + i * ldq + col;
      for (int64_t j = 0; j < visible; ++j) scores[j] = Dot(qi, k + j * ldk + kv, d_head);
      const int64_t position = rel != nullptr ? rel->query_position + i : i;
      if (shaw) {  // + q_i . a^K_clip(j-i): one dot product per clipped distance.
        float* qa = rel->scratch;
        for (int64_t r = 0; r < span; ++r) qa[r] = Dot(qi, rel->shaw_key + r * d_head, d_head);
        for (int64_t j = 0; j < visible; ++j)
          scores[j] += qa[ref::ShawIndex(j - position, rel->max_distance)];
      }
      for (int64_t j = 0; j < visible; ++j) scores[j] *= scale;
      if (rel != nullptr && rel->bias != nullptr) {
        const float* b = rel->bias + h * rel->bias_stride + rel->bias_center - position;
        for (int64_t j = 0; j < visible; ++j) scores[j] += b[j];
      }
      const float max = Max(scores, visible);
      if (!(max > -INFINITY) || max == INFINITY) {  // inf or NaN scores: the reference's way
        ref::AttentionMask all;
        all.key_length = visible;
        ref::RelativePositions one;
        if (rel != nullptr) {
          one = *rel;
          one.query_position = position;
        }
        ref::ScaledDotProductAttention(qi, ldq, k + kv, ldk, v + kv, ldv, 1, visible, d_head, all,
                                       scores, oi, ldo, rel != nullptr ? &one : nullptr, h);
        continue;
      }
      const float inv = 1.0f / ExpSum(scores, visible, max);
      for (int64_t j = 0; j < visible; ++j) Axpy(scores[j] * inv, v + j * ldv + kv, oi, d_head);
      if (shaw) {  // + sum_j alpha_ij a^V_clip(j-i), the weights summed per clipped distance.
        float* w = rel->scratch;
        for (int64_t r = 0; r < span; ++r) w[r] = 0.0f;
        for (int64_t j = 0; j < visible; ++j)
          w[ref::ShawIndex(j - position, rel->max_distance)] += scores[j] * inv;
        for (int64_t r = 0; r < span; ++r) {
          if (w[r] != 0.0f) Axpy(w[r], rel->shaw_value + r * d_head, oi, d_head);
        }
      }
    }
  }
}

}  // namespace tern::vec
