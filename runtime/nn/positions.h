// What a stack's attention needs to know about positions, set once per session at prepare:
// rotary tables (rotate Q and K after their projections), the T5 bias by distance, and Shaw's
// scratch. Absolute positions (sinusoidal, learned) are added to the embeddings instead and
// need nothing here.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/relative_position.h"
#include "runtime/kernels/reference/rotary.h"
#include "runtime/nn/weights.h"

namespace tern {

struct StackPositions {
  const ref::RotaryTable* rotary = nullptr;  // set: rotate q and k (rotary positions)
  const float* t5_bias = nullptr;            // [heads, bias_stride], distance 0 at bias_center
  int64_t bias_stride = 0;
  int64_t bias_center = 0;
  float* relative_scratch = nullptr;  // Shaw: 2k+1 floats
  int64_t max_distance = 0;           // Shaw's k
};

// The relative-position terms of one attention call whose first query sits at query_position,
// written to *out; null when the attention has none (absolute or rotary positions, and always
// for cross-attention, which passes no weights' relative tables and no T5 bias).
inline const ref::RelativePositions* RelativeTerms(const StackPositions& p,
                                                   const AttentionWeights& w,
                                                   int64_t query_position,
                                                   ref::RelativePositions* out) {
  if (p.t5_bias == nullptr && w.relative_key == nullptr) return nullptr;
  *out = ref::RelativePositions();
  out->query_position = query_position;
  out->bias = p.t5_bias;
  out->bias_stride = p.bias_stride;
  out->bias_center = p.bias_center;
  if (w.relative_key != nullptr) {
    out->shaw_key = w.relative_key;
    out->shaw_value = w.relative_value;
    out->max_distance = p.max_distance;
    out->scratch = p.relative_scratch;
  }
  return out;
}

}  // namespace tern
