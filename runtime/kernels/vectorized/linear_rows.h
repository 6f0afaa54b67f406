// The output projection on a vocabulary shortlist (docs/shortlist.md): y[i] = x . W[id] + b[id]
// for id = rows[i], i < count (packed: the search works in shortlist space), read straight from the
// model's weight (no gathered copy: a sentence's candidates change every translation, and copying
// them would cost as much as the dot products of one step). Every weight dtype: f32, f16, int8 and
// int4, per row or per block of columns. Each dot product keeps 16 partial sums in a fixed order,
// so a row's value does not depend on which other rows are listed (a sentence decodes the same
// alone or in a batch).
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::vec {

void LinearRows(const float* x, const WeightView& w, const float* bias, const int32_t* rows,
                int64_t count, float* y);

}  // namespace tern::vec
