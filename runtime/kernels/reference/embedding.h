// Token embedding lookup (paper section 3.4): out[t] = table[ids[t]] * scale.
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::ref {

// ids must be in [0, table.rows); callers validate ids at the API boundary.
void Embedding(const WeightView& table, const int32_t* ids, int64_t count, float scale, float* out);

}  // namespace tern::ref
