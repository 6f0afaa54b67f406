#include "converter/quantize.h"

#include <cmath>
#include <cstring>

#include "converter/error.h"
#include "runtime/core/fp16.h"
#include "runtime/core/tensor.h"

namespace tern::convert {

namespace {

int8_t Quantize(float value, float scale, int limit) {
  if (scale == 0.0f) return 0;
  const long q = std::lround(value / scale);
  return static_cast<int8_t>(q > limit ? limit : (q < -limit ? -limit : q));
}

// Squared error of `w` quantized with `scale`.
double SquaredError(const float* w, int64_t count, float scale, int limit) {
  double e = 0.0;
  for (int64_t c = 0; c < count; ++c) {
    const double d =
        static_cast<double>(w[c]) - static_cast<double>(scale) * Quantize(w[c], scale, limit);
    e += d * d;
  }
  return e;
}

// The scale of one int4 row quantized as a whole (group_size 0). With 15 levels for a whole row,
// max|w| / 7 spends them on the row's few largest weights and rounds the many small ones
// coarsely; a smaller scale clips the largest weights a little and halves the error of the rest.
// So the scale is the one of max|w| / 7 * a, a in {1, 0.98, ..., 0.5}, with the least squared
// error, then refined by least squares for the levels it chose (s = sum w q / sum q^2) when that
// lowers the error again (capped at max|w| / 7). max|w| / 7 is a candidate: the error is never
// above max-abs scaling, and the largest weight always takes level +-7.
float RowScaleInt4(const float* w, int64_t count, float max_abs) {
  constexpr int kLimit = 7;
  float best = max_abs / kLimit;
  if (best == 0.0f) return best;
  double best_error = SquaredError(w, count, best, kLimit);
  for (int step = 1; step <= 25; ++step) {
    const float scale = max_abs / kLimit * (1.0f - 0.02f * static_cast<float>(step));
    const double e = SquaredError(w, count, scale, kLimit);
    if (e < best_error) {
      best_error = e;
      best = scale;
    }
  }
  double wq = 0.0, qq = 0.0;
  for (int64_t c = 0; c < count; ++c) {
    const int q = Quantize(w[c], best, kLimit);
    wq += static_cast<double>(w[c]) * q;
    qq += static_cast<double>(q) * q;
  }
  if (qq > 0.0) {
    // At most max|w| / 7, so the largest weight still takes the outermost level.
    const float refined = std::fmin(static_cast<float>(wq / qq), max_abs / kLimit);
    if (refined > 0.0f && SquaredError(w, count, refined, kLimit) < best_error) best = refined;
  }
  return best;
}

}  // namespace

EncodedTensor Encode(const HostTensor& t, DType dtype, int64_t group_size) {
  EncodedTensor out;
  out.name = t.name;
  out.dtype = dtype;
  out.shape = t.shape;
  const size_t n = t.values.size();
  switch (dtype) {
    case DType::kF32:
      out.data.resize(n * 4);
      std::memcpy(out.data.data(), t.values.data(), n * 4);
      return out;
    case DType::kF16:
      out.data.resize(n * 2);
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h = Fp32ToFp16(t.values[i]);
        std::memcpy(out.data.data() + 2 * i, &h, 2);
      }
      return out;
    case DType::kI8:
    case DType::kI4:
      break;
    case DType::kI32:
      throw Error("tensor \"" + t.name + "\": cannot encode weights as i32");
  }
  if (t.shape.size() < 2) throw Error("tensor \"" + t.name + "\": only matrices are quantized");
  const int64_t rows = t.shape[0];
  const int64_t cols = static_cast<int64_t>(n) / rows;
  const int limit = dtype == DType::kI8 ? 127 : 7;
  const int64_t group =
      (dtype == DType::kI4 && group_size > 0 && group_size < cols) ? group_size : 0;
  const int64_t span = group > 0 ? group : cols;
  const int64_t groups = (cols + span - 1) / span;
  out.group_size = group;
  // int4 per row when asked for (group_size 0) searches its scale; a block as wide as a short
  // row keeps the blocks' max-abs rule, so files written with the default block are unchanged.
  const bool searched = dtype == DType::kI4 && group_size == 0;
  out.scales.resize(static_cast<size_t>(rows * groups));
  const size_t row_bytes = DTypeRowBytes(dtype, static_cast<size_t>(cols));
  out.data.assign(static_cast<size_t>(rows) * row_bytes, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = t.values.data() + r * cols;
    uint8_t* row = out.data.data() + r * row_bytes;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * span;
      const int64_t end = begin + span < cols ? begin + span : cols;
      float max_abs = 0.0f;
      for (int64_t c = begin; c < end; ++c) max_abs = std::fmax(max_abs, std::fabs(w[c]));
      const float scale = searched ? RowScaleInt4(w + begin, end - begin, max_abs)
                                   : max_abs / static_cast<float>(limit);
      out.scales[static_cast<size_t>(r * groups + g)] = scale;
      for (int64_t c = begin; c < end; ++c) {
        const int8_t q = Quantize(w[c], scale, limit);
        if (dtype == DType::kI8) {
          row[c] = static_cast<uint8_t>(q);
        } else {
          const uint8_t nibble = static_cast<uint8_t>(q) & 0xF;
          row[c >> 1] |= (c & 1) ? static_cast<uint8_t>(nibble << 4) : nibble;
        }
      }
    }
  }
  return out;
}

std::vector<float> Decode(const EncodedTensor& t) {
  WeightView w;
  w.dtype = t.dtype;
  w.data = t.data.data();
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  w.rows = t.shape.size() >= 2 ? t.shape[0] : 1;
  w.cols = n / w.rows;
  w.scales = t.scales.data();
  w.group_size = t.group_size;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t r = 0; r < w.rows; ++r) DequantizeRow(w, r, values.data() + r * w.cols);
  return values;
}

}  // namespace tern::convert
