// The FFN's activations as vectorizable float loops (the XNNPACK backend runs these): the contract
// of ref::Activate (runtime/kernels/reference/activations.h) with vectorizable exp / erf
// approximations (vector_math.h) instead of libm calls. GELU agrees with the exact erf form to
// about 1e-6 absolute per unit of |x|; Swish and the tanh GELU to about 1e-6 relative.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/activations.h"

namespace tern::vec {

void Activate(ref::Activation act, float* x, int64_t n);

}  // namespace tern::vec
