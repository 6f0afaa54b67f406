#include "runtime/kernels/vectorized/linear_rows.h"

#include "runtime/core/fp16.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int kLanes = 16;

float Sum(const float* acc) {
  float s = 0.0f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

// sum_c x[c] * v(c) over [begin, end): full blocks of 16 in lanes, the tail in lane order.
template <typename Value>
float Dot(const float* x, int64_t begin, int64_t end, Value v) {
  float acc[kLanes] = {0};
  int64_t c = begin;
  for (; c + kLanes <= end; c += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += x[c + l] * v(c + l);
  }
  for (int l = 0; c < end; ++c, ++l) acc[l] += x[c] * v(c);
  return Sum(acc);
}

// Two signed nibbles per byte, low first, unpacked without branches (sign by shifts); groups
// start at even columns (the loader checks group sizes, and int4 blocks are even).
inline int Low(uint8_t b) { return static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4; }
inline int High(uint8_t b) { return static_cast<int8_t>(b) >> 4; }

float DotInt4(const float* x, const uint8_t* row, int64_t begin, int64_t end) {
  if ((begin & 1) != 0) {  // an odd start (odd group sizes): element by element
    return Dot(x, begin, end, [row](int64_t c) { return static_cast<float>(Int4At(row, c)); });
  }
  float acc[kLanes] = {0};
  int64_t c = begin;
  for (; c + kLanes <= end; c += kLanes) {
    const uint8_t* b = row + (c >> 1);
    for (int l = 0; l < kLanes / 2; ++l) {
      acc[2 * l] += x[c + 2 * l] * static_cast<float>(Low(b[l]));
      acc[2 * l + 1] += x[c + 2 * l + 1] * static_cast<float>(High(b[l]));
    }
  }
  for (int l = 0; c < end; ++c, ++l) acc[l] += x[c] * static_cast<float>(Int4At(row, c));
  return Sum(acc);
}

float RowDot(const float* x, const WeightView& w, int64_t r) {
  const uint8_t* row = w.row(r);
  const int64_t k = w.cols;
  switch (w.dtype) {
    case DType::kF32: {
      const float* f = reinterpret_cast<const float*>(row);
      return Dot(x, 0, k, [f](int64_t c) { return f[c]; });
    }
    case DType::kF16: {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(row);
      return Dot(x, 0, k, [h](int64_t c) { return Fp16ToFp32(h[c]); });
    }
    case DType::kI8:
    case DType::kI4: {
      const int64_t group = w.group_size > 0 ? w.group_size : k;
      const float* scales = w.scales + r * w.groups_per_row();
      float sum = 0.0f;
      for (int64_t g = 0, begin = 0; begin < k; ++g, begin += group) {
        const int64_t end = begin + group < k ? begin + group : k;
        const float part =
            w.dtype == DType::kI8
                ? Dot(x, begin, end,
                      [row](int64_t c) { return static_cast<float>(static_cast<int8_t>(row[c])); })
                : DotInt4(x, row, begin, end);
        sum += part * scales[g];
      }
      return sum;
    }
    default:
      return 0.0f;
  }
}

}  // namespace

TERN_VECTOR_CLONES void LinearRows(const float* x, const WeightView& w, const float* bias,
                                   const int32_t* rows, int64_t count, float* y) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t r = rows[i];
    const float dot = RowDot(x, w, r);
    y[i] = bias ? dot + bias[r] : dot;
  }
}

}  // namespace tern::vec
