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
  // The session's part of every call's relative terms: T5's bias by distance (bias, stride,
  // center), or Shaw's k and scratch; the query position and a layer's Shaw tables come per call.
  ref::RelativePositions relative;
};

// The relative-position terms of one attention call whose first query sits at query_position,
// written to *out; null when the attention has none (absolute or rotary positions, and always
// for cross-attention, which passes no weights' relative tables and no T5 bias).
inline const ref::RelativePositions* RelativeTerms(const StackPositions& p,
                                                   const AttentionWeights& w,
                                                   int64_t query_position,
                                                   ref::RelativePositions* out) {
  if (p.relative.bias == nullptr && w.relative_key == nullptr) return nullptr;
  *out = p.relative;
  out->query_position = query_position;
  out->shaw_key = w.relative_key;  // Shaw: both set (T5: both null)
  out->shaw_value = w.relative_value;
  return out;
}

}  // namespace tern
