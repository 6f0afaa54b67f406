#include "runtime/kernels/vectorized/linear.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/fp16.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int64_t kChunk = 256;  // columns of a weight row unpacked at a time (1 KiB of floats)
constexpr int64_t kTile = 8;     // rows of x that share one unpacking of the weights
constexpr int kLanes = 16;

// Columns [c0, c1) of weight row r as floats: each exactly WeightAt(w, r, c) (a quantized
// weight is its scale times its integer, one rounding), so only the order of the sums differs
// from ref::Linear. Forced inline: the target_clones copies of Linear must each get their own
// (GCC 12 at -O2 otherwise calls one baseline copy from the AVX2 clone).
__attribute__((always_inline)) inline void Unpack(const WeightView& w, int64_t r, int64_t c0,
                                                  int64_t c1, float* out) {
  const uint8_t* row = w.row(r);
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(out, reinterpret_cast<const float*>(row) + c0,
                  static_cast<size_t>(c1 - c0) * sizeof(float));
      return;
    case DType::kF16: {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(row);
      for (int64_t c = c0; c < c1; ++c) out[c - c0] = Fp16ToFp32(h[c]);
      return;
    }
    case DType::kI8:
    case DType::kI4: {
      const int64_t group = w.group_size > 0 ? w.group_size : w.cols;
      for (int64_t begin = c0; begin < c1;) {
        const int64_t end = std::min(c1, (begin / group + 1) * group);
        const float s = w.scale(r, begin);
        float* o = out + (begin - c0);
        if (w.dtype == DType::kI8) {
          const int8_t* q = reinterpret_cast<const int8_t*>(row);
          for (int64_t c = begin; c < end; ++c) o[c - begin] = s * static_cast<float>(q[c]);
        } else {
          int64_t c = begin;
          if ((c & 1) != 0) *o++ = s * static_cast<float>(Int4At(row, c++));
          const uint8_t* b = row + (c >> 1);
          const int64_t pairs = (end - c) / 2;
          for (int64_t j = 0; j < pairs; ++j) {
            o[2 * j] = s * static_cast<float>(Int4Low(b[j]));
            o[2 * j + 1] = s * static_cast<float>(Int4High(b[j]));
          }
          c += 2 * pairs;
          if (c < end) o[2 * pairs] = s * static_cast<float>(Int4At(row, c));
        }
        begin = end;
      }
      return;
    }
    case DType::kI32: {
      const int32_t* q = reinterpret_cast<const int32_t*>(row);
      for (int64_t c = c0; c < c1; ++c) out[c - c0] = static_cast<float>(q[c]);
      return;
    }
  }
}

}  // namespace

TERN_VECTOR_CLONES void Linear(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                               const float* bias, float* y, int64_t ldy) {
  const int64_t n = w.rows, k = w.cols;
  alignas(64) float unpacked[kChunk];
  // Each row of x keeps its own 16 partial sums over the same chunks, so its outputs do not
  // depend on which rows share its tile: a sentence gives the same alone or in a batch.
  for (int64_t i0 = 0; i0 < m; i0 += kTile) {
    const int64_t tile = std::min(kTile, m - i0);
    for (int64_t r = 0; r < n; ++r) {
      float acc[kTile][kLanes] = {};
      for (int64_t c0 = 0; c0 < k; c0 += kChunk) {
        const int64_t len = std::min(kChunk, k - c0);
        Unpack(w, r, c0, c0 + len, unpacked);
        for (int64_t t = 0; t < tile; ++t) {
          const float* xi = x + (i0 + t) * ldx + c0;
          float* a = acc[t];
          int64_t c = 0;
          for (; c + kLanes <= len; c += kLanes) {
            for (int l = 0; l < kLanes; ++l) a[l] += xi[c + l] * unpacked[c + l];
          }
          for (int l = 0; c < len; ++c, ++l) a[l] += xi[c] * unpacked[c];
        }
      }
      for (int64_t t = 0; t < tile; ++t) {
        float sum = 0.0f;
        for (int l = 0; l < kLanes; ++l) sum += acc[t][l];
        y[(i0 + t) * ldy + r] = bias != nullptr ? sum + bias[r] : sum;
      }
    }
  }
}

}  // namespace tern::vec
