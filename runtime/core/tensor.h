// Non-owning views of the tensors kernels read. Weights stay where the model file put them
// (mapped or in flash); a view only records how to interpret the bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/fp16.h"

namespace tern {

// How a weight's bytes are laid out: row after row (as files hold them), or int8 rows packed for
// AVX2's sign loops (kernels/vectorized/linear_sign.h), which only those loops read.
enum class WeightLayout : uint8_t { kRows, kSignPanels };

// A 2-D weight [rows, cols], row-major; rows are output channels of a linear layer or tokens of
// an embedding table. Quantized dtypes are symmetric: value = scale * q, with one scale per
// row (group_size == 0) or per block of `group_size` columns of a row.
struct WeightView {
  DType dtype = DType::kF32;
  // kSignPanels: 16 rows take the bytes of 16 rows, so row(r) still starts the rows from r on
  // where r is a multiple of 16; single rows are not readable. (Beside dtype, and row_sums
  // beside scales, where 64-bit and 32-bit targets had padding: a session's weight records
  // grew by 8 bytes each on 64-bit targets and not at all on 32-bit ones.)
  WeightLayout layout = WeightLayout::kRows;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  const float* scales = nullptr;  // I8 / I4 only.
  // kSignPanels only: each row's sum of its int8 values (whoever takes rows [r0, r1) as a weight
  // of their own offsets it by r0, as scales).
  const int32_t* row_sums = nullptr;
  int64_t group_size = 0;  // 0: per row.

  int64_t groups_per_row() const {
    return group_size > 0 ? (cols + group_size - 1) / group_size : 1;
  }
  size_t row_bytes() const { return DTypeRowBytes(dtype, static_cast<size_t>(cols)); }
  const uint8_t* row(int64_t r) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * row_bytes();
  }
  float scale(int64_t r, int64_t c) const {
    return group_size > 0 ? scales[r * groups_per_row() + c / group_size] : scales[r];
  }
};

// Signed 4-bit value c of a packed row (two's complement nibbles, low nibble first).
inline int Int4At(const uint8_t* row, int64_t c) {
  const int byte = row[c >> 1];
  const int nibble = (c & 1) ? (byte >> 4) : (byte & 0xF);
  return nibble >= 8 ? nibble - 16 : nibble;
}

// Element (r, c) of a weight as float: the one definition of dequantization that every
// reference kernel uses.
inline float WeightAt(const WeightView& w, int64_t r, int64_t c) {
  const uint8_t* row = w.row(r);
  switch (w.dtype) {
    case DType::kF32:
      return reinterpret_cast<const float*>(row)[c];
    case DType::kF16:
      return Fp16ToFp32(reinterpret_cast<const uint16_t*>(row)[c]);
    case DType::kI8:
      return w.scale(r, c) * static_cast<float>(reinterpret_cast<const int8_t*>(row)[c]);
    case DType::kI4:
      return w.scale(r, c) * static_cast<float>(Int4At(row, c));
    case DType::kI32:
      return static_cast<float>(reinterpret_cast<const int32_t*>(row)[c]);
  }
  return 0.0f;
}

// Row r of a weight as floats into out[0, cols).
void DequantizeRow(const WeightView& w, int64_t r, float* out);

}  // namespace tern
