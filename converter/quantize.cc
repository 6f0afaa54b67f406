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
      const float scale = max_abs / static_cast<float>(limit);
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
