// Relative positions inside attention: the logit of query i for key j gets a term that depends
// on their distance j - i instead of on absolute positions added to the embeddings.
//
//  - Shaw, Uszkoreit, Vaswani 2018, "Self-Attention with Relative Position Representations":
//    learned a^K, a^V [2k+1, d_head], shared by the heads of one attention, indexed by the
//    distance clipped to [-k, k]:
//      e_ij = q_i . (k_j + a^K_clip(j-i)) / sqrt(d_head),   z_i = sum_j alpha_ij (v_j +
//      a^V_clip(j-i)).
//  - T5 (Raffel et al. 2020): a learned scalar per head and distance bucket, added to the
//    logits: small distances get a bucket each, larger ones share logarithmically wider buckets
//    up to max_distance; bidirectional (encoder) buckets also tell left from right, the
//    unidirectional ones (decoder self-attention) only look back. tern adds the bias to the
//    SCALED logit, q.k / sqrt(d_head) + b (T5 itself does not scale; its initialization absorbs
//    the factor), the same in the PyTorch reference (tools/model/tern_torch.py).
#pragma once

#include <cstdint>

namespace tern::ref {

// T5's _relative_position_bucket (Mesh TensorFlow / Hugging Face), integer for integer:
// relative_position = key position - query position. The log bucket is computed in float32 and
// truncated, as T5 does.
int32_t T5RelativePositionBucket(int64_t relative_position, bool bidirectional, int32_t num_buckets,
                                 int32_t max_distance);

// The T5 bias of every head for every distance a session can see: out[h * (2L-1) + (j-i) + L-1]
// = table[bucket(j - i)][h] for j - i in [-(L-1), L-1], L = max_length. table: [buckets, heads].
void T5BiasByDistance(const float* table, int64_t heads, int32_t num_buckets, int32_t max_distance,
                      bool bidirectional, int64_t max_length, float* out);

// Shaw's row of a^K / a^V for the distance j - i: clip(j - i, -k, k) + k.
inline int64_t ShawIndex(int64_t distance, int64_t max_distance) {
  const int64_t c = distance < -max_distance ? -max_distance
                                             : (distance > max_distance ? max_distance : distance);
  return c + max_distance;
}

// What an attention call adds for relative positions (null pointer: nothing). Key j sits at
// position j; query i at position query_position + i (the step, during incremental decoding).
struct RelativePositions {
  int64_t query_position = 0;
  // T5: bias[h * bias_stride + (j - i_pos) + bias_center] added to the scaled logit.
  const float* bias = nullptr;
  int64_t bias_stride = 0;
  int64_t bias_center = 0;
  // Shaw: a^K and a^V rows [2k+1, d_head] (both set, or neither), k = max_distance.
  const float* shaw_key = nullptr;
  const float* shaw_value = nullptr;
  int64_t max_distance = 0;
  float* scratch = nullptr;  // Shaw: 2k+1 floats (q.a^K per distance, then alpha per distance)
};

}  // namespace tern::ref
