// K/V for the fp16-cache tests: halves, and floats holding exactly the halves' values, so that
// attention over either can be compared (runtime/core/fp16.h's conversions, which
// tests/runtime/kernels/vectorized/half_test.cc checks against their definition).
#pragma once

#include <vector>

#include "runtime/core/fp16.h"

namespace tern::testing {

// Rounds x to fp16 in place and returns the halves.
inline std::vector<Half> RoundToHalves(std::vector<float>* x) {
  std::vector<Half> h(x->size());
  for (size_t i = 0; i < x->size(); ++i) {
    h[i] = ToHalf((*x)[i]);
    (*x)[i] = ToFloat(h[i]);
  }
  return h;
}

}  // namespace tern::testing
