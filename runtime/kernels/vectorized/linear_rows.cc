#include "runtime/kernels/vectorized/linear_rows.h"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

// Int4 rows are read two nibbles per byte (Int4Low, Int4High); groups start at even columns
// (the loader checks group sizes, and int4 blocks are even).

float DotInt4(const float* x, const uint8_t* row, int64_t begin, int64_t end) {
  if ((begin & 1) != 0) {  // an odd start (odd group sizes): element by element
    return Dot(x, begin, end, [row](int64_t c) { return static_cast<float>(Int4At(row, c)); });
  }
  float acc[kLanes] = {0};
  int64_t c = begin;
  for (; c + kLanes <= end; c += kLanes) {
    const uint8_t* b = row + (c >> 1);
    for (int l = 0; l < kLanes / 2; ++l) {
      acc[2 * l] += x[c + 2 * l] * static_cast<float>(Int4Low(b[l]));
      acc[2 * l + 1] += x[c + 2 * l + 1] * static_cast<float>(Int4High(b[l]));
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

// sum_c xq[c] * w[c]: exact in int32 (|xq| <= 255, |w| <= 128, k < 2^16 columns), so the
// order of the sums does not matter and the compiler may vectorize freely.
int32_t DotQd8Int8(const int16_t* xq, const int8_t* w, int64_t k) {
  int32_t sum = 0;
  for (int64_t c = 0; c < k; ++c) sum += int32_t{xq[c]} * int32_t{w[c]};
  return sum;
}

// Columns [from, k) of an int4 row (from even).
int32_t DotQd8Int4From(const int16_t* xq, const uint8_t* row, int64_t from, int64_t k) {
  int32_t sum = 0;
  const int64_t pairs = k / 2;
  for (int64_t i = from / 2; i < pairs; ++i) {
    sum += int32_t{xq[2 * i]} * Int4Low(row[i]) + int32_t{xq[2 * i + 1]} * Int4High(row[i]);
  }
  if ((k & 1) != 0) sum += int32_t{xq[k - 1]} * Int4Low(row[pairs]);
  return sum;
}

int32_t DotQd8Int4(const int16_t* xq, const uint8_t* row, int64_t k) {
  return DotQd8Int4From(xq, row, 0, k);
}

#if defined(__x86_64__)
// The same sums with AVX2's vpmaddwd (16-bit products, adjacent pairs added into 32 bits: exact,
// |pair| <= 2 x 255 x 128). GCC vectorizes the loops above with vpmullw / vpmulhw and unpacks,
// several times slower; these run when the CPU has AVX2 (RowDots below).
__attribute__((target("avx2"))) int32_t HorizontalSum(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1)));
}

__attribute__((target("avx2"))) int32_t DotQd8Int8Avx2(const int16_t* xq, const int8_t* w,
                                                       int64_t k) {
  __m256i acc = _mm256_setzero_si256();
  int64_t c = 0;
  for (; c + 16 <= k; c += 16) {
    const __m256i wv =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + c)));
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + c));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(xv, wv));
  }
  int32_t sum = HorizontalSum(acc);
  for (; c < k; ++c) sum += int32_t{xq[c]} * int32_t{w[c]};
  return sum;
}

__attribute__((target("avx2"))) int32_t DotQd8Int4Avx2(const int16_t* xq, const uint8_t* row,
                                                       int64_t k) {
  __m256i acc = _mm256_setzero_si256();
  int64_t c = 0;
  for (; c + 32 <= k; c += 32) {  // 16 bytes: columns c .. c + 31
    const __m256i b =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c / 2)));
    const __m256i low = _mm256_srai_epi16(_mm256_slli_epi16(b, 12), 12);  // even columns
    const __m256i high = _mm256_srai_epi16(b, 4);                         // odd columns
    // Interleaved back into column order: per 128-bit lane unpack gives columns 0-7 | 16-23
    // and 8-15 | 24-31; the lane permutes make 0-15 and 16-31.
    const __m256i lo = _mm256_unpacklo_epi16(low, high);
    const __m256i hi = _mm256_unpackhi_epi16(low, high);
    const __m256i w0 = _mm256_permute2x128_si256(lo, hi, 0x20);
    const __m256i w1 = _mm256_permute2x128_si256(lo, hi, 0x31);
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + c));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + c + 16));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x0, w0));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x1, w1));
  }
  return HorizontalSum(acc) + DotQd8Int4From(xq, row, c, k);
}
#endif

// The dot products LinearRowsQd8 uses on this CPU.
struct RowDots {
  int32_t (*int8)(const int16_t*, const int8_t*, int64_t) = DotQd8Int8;
  int32_t (*int4)(const int16_t*, const uint8_t*, int64_t) = DotQd8Int4;
};

const RowDots& Dots() {
  static const RowDots dots = [] {
    RowDots d;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
      d.int8 = DotQd8Int8Avx2;
      d.int4 = DotQd8Int4Avx2;
    }
#endif
    return d;
  }();
  return dots;
}

}  // namespace

bool Qd8Rows(const WeightView& w) {
  return (w.dtype == DType::kI8 || w.dtype == DType::kI4) && w.groups_per_row() == 1 &&
         w.cols < (int64_t{1} << 16);
}

TERN_VECTOR_CLONES void LinearRowsQd8(const int16_t* xq, Qd8Row p, const WeightView& w,
                                      const float* bias, const int32_t* rows, int64_t count,
                                      float* y, const int32_t* bias_ids) {
  const int64_t k = w.cols;
  const bool fused = Qd8EpilogueFused();
  const RowDots& dots = Dots();
  const size_t row_bytes = w.row_bytes();
  constexpr int64_t kAhead = 4;  // rows prefetched ahead: candidates are scattered rows, which
                                 // the hardware prefetcher does not foresee
  for (int64_t i = 0; i < count; ++i) {
    const int32_t r = rows != nullptr ? rows[i] : static_cast<int32_t>(i);
    const int32_t b = bias_ids != nullptr ? bias_ids[i] : r;
    if (rows != nullptr && i + kAhead < count) {  // a copy is read front to back: no need
      // Every cache line the row touches, from the one its first byte is in.
      const uintptr_t first = reinterpret_cast<uintptr_t>(w.row(rows[i + kAhead]));
      for (uintptr_t a = first & ~uintptr_t{63}; a < first + row_bytes; a += 64) {
        __builtin_prefetch(reinterpret_cast<const void*>(a));
      }
    }
    const int32_t sum = w.dtype == DType::kI8
                            ? dots.int8(xq, reinterpret_cast<const int8_t*>(w.row(r)), k)
                            : dots.int4(xq, w.row(r), k);
    y[i] = Qd8Output(sum, p.inv_scale, w.scales[r], bias != nullptr ? bias + b : nullptr, fused);
  }
}

TERN_VECTOR_CLONES void LinearRows(const float* x, const WeightView& w, const float* bias,
                                   const int32_t* rows, int64_t count, float* y,
                                   const int32_t* bias_ids) {
  for (int64_t i = 0; i < count; ++i) {
    const int32_t r = rows != nullptr ? rows[i] : static_cast<int32_t>(i);
    const float dot = RowDot(x, w, r);
    y[i] = bias ? dot + bias[bias_ids != nullptr ? bias_ids[i] : r] : dot;
  }
}

}  // namespace tern::vec
