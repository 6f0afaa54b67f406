#include "runtime/kernels/vectorized/linear_rows.h"

#include "runtime/core/fp16.h"

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
                : Dot(x, begin, end,
                      [row](int64_t c) { return static_cast<float>(Int4At(row, c)); });
        sum += part * scales[g];
      }
      return sum;
    }
    default:
      return 0.0f;
  }
}

}  // namespace

void LinearRows(const float* x, const WeightView& w, const float* bias, const int32_t* rows,
                int64_t count, float* y) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t r = rows[i];
    const float dot = RowDot(x, w, r);
    y[r] = bias ? dot + bias[r] : dot;
  }
}

}  // namespace tern::vec
