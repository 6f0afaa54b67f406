#include "runtime/kernels/vectorized/attention.h"

#include <cmath>

#include "runtime/kernels/vectorized/half.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int kLanes = 16;

// lanes[0] + ... + lanes[kLanes - 1], halving pairwise: 4 vector adds instead of 16 dependent
// scalar ones, which at d_head 64 cost more than the dot product's multiplies.
inline float SumLanes(float* lanes) {
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  }
  return lanes[0];
}

// b: float, or Half (an fp16 cache's key, widened exactly: the same bits as a float key of
// the same value).
template <typename T>
inline float Dot(const float* a, const T* b, int64_t n) {
  float acc[kLanes] = {};
  const int64_t full = n - n % kLanes;
  for (int64_t i = 0; i < full; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * Widen(b[i + l]);
  }
  float sum = SumLanes(acc);
  for (int64_t i = full; i < n; ++i) sum += a[i] * Widen(b[i]);
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

// x[i] = e^(x[i] - max), returning their sum. vec::Exp (branch-free, relative error ~1e-7)
// instead of std::exp, a library call per key that kept this loop scalar; the sum in lanes.
// x[i] - max <= 0, and Exp's clamp at -87 adds at most ~1.6e-38 per masked-out key.
inline float ExpSum(float* x, int64_t n, float max) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      x[i + l] = Exp(x[i + l] - max);
      lanes[l] += x[i + l];
    }
  }
  float sum = SumLanes(lanes);
  for (; i < n; ++i) {
    x[i] = Exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

// out[0, n) += a * x[0, n)
template <typename T>
inline void Axpy(float a, const T* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] += a * Widen(x[i]);
}

// scores[j] = q . k_j for the n keys (rows ldk apart), and out[0, d) += sum_j w_j v_j: the two
// loops over the K/V cache. With the head size a constant (Fixed below) the d-wide accumulator
// stays in vector registers across the keys instead of being loaded and stored once per key,
// which was most of a decode step's attention time (store-to-load round trips on `out`). The
// sums run in the same order either way, so both give the same bits.
template <int64_t D, typename KV>
inline void ScoresFixed(const float* q, const KV* k, int64_t ldk, int64_t n, float* scores) {
  for (int64_t j = 0; j < n; ++j) scores[j] = Dot(q, k + j * ldk, D);
}

template <int64_t D, typename KV>
inline void WeightedSumFixed(const float* w, float scale, const KV* v, int64_t ldv, int64_t n,
                             float* out) {
  float acc[D] = {};
  for (int64_t j = 0; j < n; ++j) {
    const float a = w[j] * scale;
    const KV* vj = v + j * ldv;
    for (int64_t c = 0; c < D; ++c) acc[c] += a * Widen(vj[c]);
  }
  for (int64_t c = 0; c < D; ++c) out[c] += acc[c];
}

template <typename KV>
inline void Scores(const float* q, const KV* k, int64_t ldk, int64_t n, int64_t d,
                   float* scores) {
  switch (d) {
    case 32:
      return ScoresFixed<32, KV>(q, k, ldk, n, scores);
    case 64:
      return ScoresFixed<64, KV>(q, k, ldk, n, scores);
    case 128:
      return ScoresFixed<128, KV>(q, k, ldk, n, scores);
    default:
      for (int64_t j = 0; j < n; ++j) scores[j] = Dot(q, k + j * ldk, d);
  }
}

template <typename KV>
inline void WeightedSum(const float* w, float scale, const KV* v, int64_t ldv, int64_t n,
                        int64_t d, float* out) {
  switch (d) {
    case 32:
      return WeightedSumFixed<32, KV>(w, scale, v, ldv, n, out);
    case 64:
      return WeightedSumFixed<64, KV>(w, scale, v, ldv, n, out);
    case 128:
      return WeightedSumFixed<128, KV>(w, scale, v, ldv, n, out);
    default:
      for (int64_t j = 0; j < n; ++j) Axpy(w[j] * scale, v + j * ldv, out, d);
  }
}

// The kernel for either K/V element type, inlined into each entry point below so that every
// clone (TERN_VECTOR_CLONES) compiles it for its own target.
template <typename KV>
__attribute__((always_inline)) inline void Attend(const float* q, int64_t ldq, const KV* k,
                                                  int64_t ldk, const KV* v, int64_t ldv, int64_t tq,
                                                  int64_t tk, int64_t heads, int64_t d_head,
                                                  const ref::AttentionMask& mask, float* scores,
                                                  float* out, int64_t ldo,
                                                  const ref::RelativePositions* rel,
                                                  int64_t kv_heads) {
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
      Scores(qi, k + kv, ldk, visible, d_head, scores);
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
      WeightedSum(scores, inv, v + kv, ldv, visible, d_head, oi);
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

}  // namespace

TERN_VECTOR_CLONES
void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel, int64_t kv_heads) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

TERN_VECTOR_CLONES
void MultiHeadAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel, int64_t kv_heads) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

}  // namespace tern::vec
