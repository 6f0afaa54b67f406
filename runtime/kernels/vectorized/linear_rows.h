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
#include "runtime/kernels/vectorized/qd8.h"

namespace tern::vec {

// Float dot products with the weights converted per element: what the reference backend's
// ref::Linear computes (to rounding).
// rows null: rows 0 .. count - 1 (the candidates' rows copied together, docs/shortlist.md);
// bias_ids: which entry of bias belongs to row i (null: rows[i], or i).
void LinearRows(const float* x, const WeightView& w, const float* bias, const int32_t* rows,
                int64_t count, float* y, const int32_t* bias_ids = nullptr);

// The rows of an int8 or int4 per-row weight (Qd8Rows(w)) as XNNPACK's qd8_f32_qc8w / qc4w GEMMs
// compute them: the exact int32 sum of (q - zero point) x weight, then
// float(sum) * inv_scale, times the row scale plus the bias (fused where XNNPACK's kernel for
// this CPU fuses it). A candidate's logit is then the full projection's to the bit (on x86-64,
// and on ARM except the multi-row assembly kernels linear_rows.cc names, where it agrees to
// rounding), so the shortlist changes a translation only where the full vocabulary's choice
// lies outside the candidates.
// rows and bias_ids as for LinearRows.
void LinearRowsQd8(const int16_t* xq, Qd8Row p, const WeightView& w, const float* bias,
                   const int32_t* rows, int64_t count, float* y, const int32_t* bias_ids = nullptr);
// Whether LinearRowsQd8 takes this weight: int8 or int4 with one scale per row.
bool Qd8Rows(const WeightView& w);

}  // namespace tern::vec
