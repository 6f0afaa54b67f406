#include "runtime/kernels/vectorized/linear_qd8.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/kernels/vectorized/qd8.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int64_t kTile = 8;      // rows of x quantized together, sharing each unpacked weight row
constexpr int64_t kChunk = 1024;  // columns quantized at a time: the tile takes 16 KiB of stack

int64_t BlockOf(const WeightView& w) { return w.group_size > 0 ? w.group_size : w.cols; }

// One scale per row: the loops keep each output's exact int32 sum (in y's memory, as bits) over
// the chunks, and the epilogue scales it as XNNPACK's qd8_f32_qc8w / qc4w GEMMs do (Qd8Output),
// so such a layer gives those operators' bits where their kernels are wrong (kernel_check.h),
// and the shortlist's row kernel (LinearRowsQd8) gives its candidates the same logits.
bool PerRow(const WeightView& w) { return w.groups_per_row() == 1; }

// Adds a chunk's int32 sum to the one y holds (c0 == 0: stores it).
inline void AddSum(float* out, int64_t c0, int32_t sum) {
  if (c0 != 0) {
    int32_t held;
    std::memcpy(&held, out, sizeof held);
    sum += held;
  }
  std::memcpy(out, &sum, sizeof sum);
}

// The part of the loops both versions share: tiles of rows, each row's quantization parameters
// over its whole width, then chunks of columns. chunk(c0, c1, tile, y of the tile) adds each row's
// partial sums over [c0, c1) to y (the first chunk stores them); the epilogue multiplies by
// the row's dequantization scale and adds the bias.
template <typename Quantize, typename Chunk>
__attribute__((always_inline)) inline void Tiles(const float* x, int64_t m, int64_t ldx,
                                                 const WeightView& w, const float* bias, float* y,
                                                 int64_t ldy, Quantize quantize, Chunk chunk) {
  const int64_t n = w.rows, k = w.cols;
  for (int64_t i0 = 0; i0 < m; i0 += kTile) {
    const int64_t tile = std::min(kTile, m - i0);
    if (k == 0) {  // no chunks: the sums are empty
      for (int64_t t = 0; t < tile; ++t) std::fill_n(y + (i0 + t) * ldy, n, 0.0f);
    }
    Qd8Row p[kTile];
    for (int64_t t = 0; t < tile; ++t) p[t] = Qd8Params(x + (i0 + t) * ldx, k);
    for (int64_t c0 = 0; c0 < k; c0 += kChunk) {
      const int64_t c1 = std::min(k, c0 + kChunk);
      for (int64_t t = 0; t < tile; ++t) quantize(t, x + (i0 + t) * ldx + c0, p[t], c1 - c0);
      chunk(c0, c1, tile, y + i0 * ldy);
    }
    for (int64_t t = 0; t < tile; ++t) {
      float* yi = y + (i0 + t) * ldy;
      const float inv_scale = p[t].inv_scale;
      if (PerRow(w)) {
        const bool fused = Qd8EpilogueFused();
        for (int64_t r = 0; r < n; ++r) {
          int32_t sum;
          std::memcpy(&sum, yi + r, sizeof sum);  // k == 0: the 0.0f above, 0 as bits
          yi[r] =
              Qd8Output(sum, inv_scale, w.scales[r], bias != nullptr ? bias + r : nullptr, fused);
        }
        continue;
      }
      for (int64_t r = 0; r < n; ++r) {
        const float v = yi[r] * inv_scale;
        yi[r] = bias != nullptr ? v + bias[r] : v;
      }
    }
  }
}

// Columns [c0, c1) of weight row r as int16 in column order (c0 even: chunks start at
// multiples of kChunk).
__attribute__((always_inline)) inline void UnpackInOrder(const WeightView& w, int64_t r, int64_t c0,
                                                         int64_t c1, int16_t* out) {
  const uint8_t* row = w.row(r);
  if (w.dtype == DType::kI8) {
    const int8_t* q = reinterpret_cast<const int8_t*>(row);
    for (int64_t c = c0; c < c1; ++c) out[c - c0] = q[c];
    return;
  }
  const uint8_t* b = row + c0 / 2;
  const int64_t pairs = (c1 - c0) / 2;
  for (int64_t j = 0; j < pairs; ++j) {
    out[2 * j] = static_cast<int16_t>(Int4Low(b[j]));
    out[2 * j + 1] = static_cast<int16_t>(Int4High(b[j]));
  }
  if (((c1 - c0) & 1) != 0) out[2 * pairs] = static_cast<int16_t>(Int4Low(b[pairs]));
}

TERN_VECTOR_CLONES void PortableLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                                      const float* bias, float* y, int64_t ldy) {
  alignas(64) int16_t xq[kTile][kChunk];
  alignas(64) int16_t wq[kChunk];
  const int64_t block = BlockOf(w), blocks = w.groups_per_row();
  Tiles(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        QuantizeQd8(xt, p, count, xq[t]);
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        if (PerRow(w)) {
          for (int64_t r = 0; r < w.rows; ++r) {
            UnpackInOrder(w, r, c0, c1, wq);
            for (int64_t t = 0; t < tile; ++t) {
              int32_t sum = 0;  // exact: |xq| <= 255, |w| <= 128, k < 2^16
              for (int64_t c = 0; c < c1 - c0; ++c) sum += int32_t{xq[t][c]} * int32_t{wq[c]};
              AddSum(yt + t * ldy + r, c0, sum);
            }
          }
          return;
        }
        for (int64_t r = 0; r < w.rows; ++r) {
          UnpackInOrder(w, r, c0, c1, wq);
          const float* scales = w.scales + r * blocks;
          for (int64_t t = 0; t < tile; ++t) {
            const int16_t* xt = xq[t];
            float acc = 0.0f;
            for (int64_t b0 = c0, g = c0 / block; b0 < c1; ++g) {
              const int64_t b1 = std::min(c1, (g + 1) * block);
              int32_t sum = 0;  // exact: |xq| <= 255, |w| <= 128
              for (int64_t c = b0 - c0; c < b1 - c0; ++c) sum += int32_t{xt[c]} * int32_t{wq[c]};
              acc += static_cast<float>(sum) * scales[g];
              b0 = b1;
            }
            float* out = yt + t * ldy + r;
            *out = c0 == 0 ? acc : *out + acc;
          }
        }
      });
}

#if defined(__x86_64__)
// AVX2's vpmaddwd: 16-bit products, adjacent pairs added into 32-bit lanes (exact). Each lane
// keeps its own int32 sum over a block, converted and scaled per block into 8 float lanes, added
// up once per chunk. int4 rows unpack without interleaving: each 32 columns of the row and of
// the quantized x are laid out as the 16 even columns, then the 16 odd ones (the low and the
// high nibbles of 16 bytes), which pairs the same values.
constexpr int64_t kAvx2Step = 16;  // columns per vpmaddwd

__attribute__((target("avx2"))) void UnpackSplit(const WeightView& w, int64_t r, int64_t c0,
                                                 int64_t c1, int16_t* out) {
  const uint8_t* row = w.row(r);
  if (w.dtype == DType::kI8) {
    for (int64_t c = c0; c < c1; c += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + (c - c0)), _mm256_cvtepi8_epi16(b));
    }
    return;
  }
  for (int64_t c = c0; c < c1; c += 32) {
    const __m256i b =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c / 2)));
    const __m256i even = _mm256_srai_epi16(_mm256_slli_epi16(b, 12), 12);  // low nibbles
    const __m256i odd = _mm256_srai_epi16(b, 4);                           // high nibbles
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + (c - c0)), even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + (c - c0) + 16), odd);
  }
}

__attribute__((target("avx2"))) float HorizontalSum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

__attribute__((target("avx2"))) int32_t HorizontalSumI(__m256i v) {
  const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  const __m128i t = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(t, _mm_shuffle_epi32(t, 1)));
}

// The int32 lanes of one row of split-quantized x (xt) times the int4 weight bytes of the same
// columns (steps of QD8_STEP columns, a whole number of 32), the nibbles unpacked in registers
// as UnpackSplit lays them out: the same lanes as BlockSum over UnpackSplit's buffer, without
// its stores and loads (a decode step's one row reads each weight once).
__attribute__((target("avx2"))) __m256i BlockSumInt4Avx2(const uint8_t* bytes, const int16_t* xt,
                                                         int64_t steps) {
  __m256i sum = _mm256_setzero_si256();
  for (int64_t s = 0; s < steps; s += 2) {  // 32 columns: 16 bytes
    const __m256i b =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + s * 8)));
    const __m256i even = _mm256_srai_epi16(_mm256_slli_epi16(b, 12), 12);  // low nibbles
    const __m256i odd = _mm256_srai_epi16(b, 4);                           // high nibbles
    const int16_t* x = xt + s * 16;
    sum = _mm256_add_epi32(
        sum, _mm256_madd_epi16(even, _mm256_load_si256(reinterpret_cast<const __m256i*>(x))));
    sum = _mm256_add_epi32(
        sum, _mm256_madd_epi16(odd, _mm256_load_si256(reinterpret_cast<const __m256i*>(x + 16))));
  }
  return sum;
}

#define QD8_TARGET "avx2,fma"
#define QD8_NAME(n) n##Avx2
#define QD8_I __m256i
#define QD8_F __m256
#define QD8_STEP 16
#define QD8_MADD(x, w)                                                      \
  _mm256_madd_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(x)), \
                    _mm256_load_si256(reinterpret_cast<const __m256i*>(w)))
#define QD8_ADD_I _mm256_add_epi32
#define QD8_ZERO_I _mm256_setzero_si256
#define QD8_ZERO_F _mm256_setzero_ps
#define QD8_SET1 _mm256_set1_ps
#define QD8_ADD_F _mm256_add_ps
#define QD8_HSUM HorizontalSum
#define QD8_HSUM_I HorizontalSumI
#define QD8_FMA(i, s, acc) _mm256_fmadd_ps(_mm256_cvtepi32_ps(i), s, acc)
#include "runtime/kernels/vectorized/linear_qd8_chunk.inc"

// AVX-512's: twice the columns per instruction (vpmaddwd on 32 columns), blocks and rows in
// whole multiples of 32 columns.
__attribute__((target("avx512f,avx512dq,avx2"))) inline float HorizontalSum512(__m512 v) {
  return HorizontalSum(_mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0),
                                     _mm512_maskz_extractf32x8_ps(0xFF, v, 1)));
}

__attribute__((target("avx512f,avx512dq,avx2"))) inline int32_t HorizontalSumI512(__m512i v) {
  return HorizontalSumI(_mm256_add_epi32(_mm512_maskz_extracti32x8_epi32(0xFF, v, 0),
                                         _mm512_maskz_extracti32x8_epi32(0xFF, v, 1)));
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx2"))) __m512i BlockSumInt4Avx512(
    const uint8_t* bytes, const int16_t* xt, int64_t steps) {
  // The 16 bytes twice, sign-extended to 32 int16: shifted left by 12 (the first 16, low
  // nibbles to the top) or 8 (the last 16, high nibbles), then arithmetically right by 12.
  const __m512i shifts =
      _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(12), _mm512_set1_epi16(8));
  __m512i sum = _mm512_setzero_si512();
  for (int64_t s = 0; s < steps; ++s) {  // 32 columns: 16 bytes
    const __m512i b = _mm512_cvtepi8_epi16(_mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + s * 16))));
    const __m512i w = _mm512_srai_epi16(_mm512_sllv_epi16(b, shifts), 12);
    sum = _mm512_add_epi32(sum, _mm512_madd_epi16(w, _mm512_load_si512(xt + s * 32)));
  }
  return sum;
}

#define QD8_TARGET "avx512f,avx512bw,avx512dq,avx2,fma"
#define QD8_NAME(n) n##Avx512
#define QD8_I __m512i
#define QD8_F __m512
#define QD8_STEP 32
#define QD8_MADD(x, w) _mm512_madd_epi16(_mm512_load_si512(x), _mm512_load_si512(w))
#define QD8_ADD_I _mm512_add_epi32
#define QD8_ZERO_I _mm512_setzero_si512
#define QD8_ZERO_F _mm512_setzero_ps
#define QD8_SET1 _mm512_set1_ps
#define QD8_ADD_F _mm512_add_ps
#define QD8_HSUM HorizontalSum512
#define QD8_HSUM_I HorizontalSumI512
// (maskz: GCC 12 reports _mm512_cvtepi32_ps's undefined pass-through as uninitialized.)
#define QD8_FMA(i, s, acc) _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, i), s, acc)
#include "runtime/kernels/vectorized/linear_qd8_chunk.inc"

// The tiles of x quantized (int4: each 32 columns split into the even and the odd ones, as
// UnpackSplit lays out the weights), each chunk run by `chunk` (AnyChunkAvx2 / AnyChunkAvx512).
void SplitLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
                float* y, int64_t ldy,
                void (*chunk)(const WeightView&, int64_t, int64_t, const int16_t (*)[kChunk],
                              int64_t, int16_t*, float*, int64_t)) {
  alignas(64) int16_t xq[kTile][kChunk];
  alignas(64) int16_t wq[kChunk];
  alignas(64) int16_t in_order[kChunk];
  const bool split = w.dtype == DType::kI4;
  Tiles(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        if (!split) {
          QuantizeQd8(xt, p, count, xq[t]);
          return;
        }
        QuantizeQd8(xt, p, count, in_order);
        for (int64_t c = 0; c < count; c += 32) {
          for (int64_t j = 0; j < 16; ++j) {
            xq[t][c + j] = in_order[c + 2 * j];
            xq[t][c + 16 + j] = in_order[c + 2 * j + 1];
          }
        }
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        chunk(w, c0, c1, xq, tile, wq, yt, ldy);
      });
}

bool CpuHas(Qd8Isa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq");
  return isa == Qd8Isa::kPortable || (isa == Qd8Isa::kAvx2 && avx2) ||
         (isa == Qd8Isa::kAvx512 && avx512);
}
#endif

}  // namespace

bool LinearQd8Takes(const WeightView& w) { return w.dtype == DType::kI8 || w.dtype == DType::kI4; }

bool LinearQd8Runs(Qd8Isa isa, const WeightView& w) {
  if (!LinearQd8Takes(w)) return false;
  if (isa == Qd8Isa::kPortable) return true;
#if defined(__x86_64__)
  // Whole steps in every block and chunk: AVX2 16 columns (int8) or 32 (int4: 16 bytes split
  // into the even and the odd columns); AVX-512 32.
  const int64_t step = isa == Qd8Isa::kAvx2 && w.dtype == DType::kI8 ? 16 : 32;
  return CpuHas(isa) && w.cols % step == 0 && BlockOf(w) % step == 0;
#else
  return false;
#endif
}

Qd8Isa LinearQd8Best(const WeightView& w) {
  for (Qd8Isa isa : {Qd8Isa::kAvx512, Qd8Isa::kAvx2}) {
    if (LinearQd8Runs(isa, w)) return isa;
  }
  return Qd8Isa::kPortable;
}

void LinearQd8On(Qd8Isa isa, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy) {
  if (!LinearQd8Runs(isa, w)) isa = Qd8Isa::kPortable;  // a CPU or a weight it does not take
#if defined(__x86_64__)
  if (isa == Qd8Isa::kAvx512) return SplitLoops(x, m, ldx, w, bias, y, ldy, AnyChunkAvx512);
  if (isa == Qd8Isa::kAvx2) return SplitLoops(x, m, ldx, w, bias, y, ldy, AnyChunkAvx2);
#else
  (void)isa;
#endif
  PortableLoops(x, m, ldx, w, bias, y, ldy);
}

void LinearQd8(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
  LinearQd8On(LinearQd8Best(w), x, m, ldx, w, bias, y, ldy);
}

}  // namespace tern::vec
