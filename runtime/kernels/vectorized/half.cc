#include "runtime/kernels/vectorized/half.h"

#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

TERN_VECTOR_CLONES
void ToHalf(const float* x, int64_t n, Half* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = Narrow(Saturate(x[i]));
}

}  // namespace tern::vec
