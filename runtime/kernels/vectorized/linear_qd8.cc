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

// AVX-512 VNNI's vpdpbusd for int4 with one scale per row: 64 products of unsigned by signed
// bytes per instruction, added into 16 int32 lanes (exact), where vpmaddwd above takes 32
// 16-bit ones and an add. The weight bytes stay as the file has them (no packed copy): 32 bytes
// of a row, broadcast to both halves of a register, give its 64 nibbles (the low ones, the even
// columns, in the lower half; the high ones, the odd columns, in the upper), each as w + 8 in
// 0..15 (the nibble's two's complement with its top bit flipped). x is quantized to int8 q (not
// q - zero point, which needs 9 bits) in the same order, and the sum is corrected exactly:
//   sum (q - zp) w = [sum (w + 8) q - 8 sum q] - zp [sum (w + 8) - 8 k].
// Four rows of x times four weight rows at a time (16 accumulators), reduced four at a time.
constexpr int64_t kVnniStep = 64;  // columns per vpdpbusd

#define TERN_VNNI_TARGET "avx512f,avx512bw,avx512dq,avx512vnni,avx2,fma"

// The int32 sums of the four accumulators, in lanes 0..3. (maskz forms throughout: GCC 12
// reports the plain forms' undefined pass-through as uninitialized.)
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m128i Reduce4(__m512i a0,
                                                                                __m512i a1,
                                                                                __m512i a2,
                                                                                __m512i a3) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512i t0 = _mm512_add_epi32(_mm512_maskz_unpacklo_epi32(kAll, a0, a1),
                                      _mm512_maskz_unpackhi_epi32(kAll, a0, a1));
  const __m512i t1 = _mm512_add_epi32(_mm512_maskz_unpacklo_epi32(kAll, a2, a3),
                                      _mm512_maskz_unpackhi_epi32(kAll, a2, a3));
  const __m512i t = _mm512_add_epi32(_mm512_maskz_unpacklo_epi64(0xFF, t0, t1),
                                     _mm512_maskz_unpackhi_epi64(0xFF, t0, t1));
  const __m256i h = _mm256_add_epi32(_mm512_maskz_extracti64x4_epi64(0xF, t, 0),
                                     _mm512_maskz_extracti64x4_epi64(0xF, t, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The sum of the eight int64 lanes.
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline int64_t Sum64(__m512i v) {
  const __m256i h = _mm256_add_epi64(_mm512_maskz_extracti64x4_epi64(0xF, v, 0),
                                     _mm512_maskz_extracti64x4_epi64(0xF, v, 1));
  const __m128i q = _mm_add_epi64(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  return _mm_cvtsi128_si64(q) + _mm_extract_epi64(q, 1);
}

// 32 bytes of a weight row as its 64 nibbles, each as w + 8: (b >> shift) & 0x0F ^ 0x08, the
// shift 0 in the lower half (the low nibbles) and 4 in the upper (the high ones).
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m512i Nibbles(
    const uint8_t* bytes, __m512i shifts) {
  const __m512i b = _mm512_maskz_broadcast_i64x4(
      0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  return _mm512_ternarylogic_epi32(_mm512_srlv_epi16(b, shifts), _mm512_set1_epi8(0x0F),
                                   _mm512_set1_epi8(8), 0x6A);
}

// Rows [r, r + kR) of the weight times rows [t, t + kT) of the tile over the chunk [c0, c1):
// each output's exact sum of (q - zp) w added to the int32 y holds (AddSum). The accumulators
// are named variables, not an array, so that they stay in registers (GCC keeps arrays of
// vectors on the stack); the guards on kT and kR are compile-time.
template <int kT, int kR>
__attribute__((target(TERN_VNNI_TARGET))) void VnniBlock(const WeightView& w, int64_t r, int64_t c0,
                                                         int64_t c1, const int8_t (*xq)[kChunk],
                                                         const int32_t* qsum, const int32_t* zp,
                                                         int64_t t, float* y, int64_t ldy) {
  const __m512i shifts =
      _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_setzero_si512(), _mm512_set1_epi16(4));
  const __m512i z = _mm512_setzero_si512();
  const uint8_t* row0 = w.row(r) + c0 / 2;
  const uint8_t* row1 = kR > 1 ? w.row(r + 1) + c0 / 2 : row0;
  const uint8_t* row2 = kR > 2 ? w.row(r + 2) + c0 / 2 : row0;
  const uint8_t* row3 = kR > 3 ? w.row(r + 3) + c0 / 2 : row0;
  __m512i a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
  __m512i a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
  __m512i s0 = z, s1 = z, s2 = z, s3 = z;  // sums of w + 8 (vpsadbw: 8 bytes per int64 lane)
  const int64_t steps = (c1 - c0) / kVnniStep;
  for (int64_t s = 0; s < steps; ++s) {
    __m512i w0 = Nibbles(row0 + s * 32, shifts), w1 = z, w2 = z, w3 = z;
    s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
    if constexpr (kR > 1) {
      w1 = Nibbles(row1 + s * 32, shifts);
      s1 = _mm512_add_epi64(s1, _mm512_sad_epu8(w1, z));
    }
    if constexpr (kR > 2) {
      w2 = Nibbles(row2 + s * 32, shifts);
      s2 = _mm512_add_epi64(s2, _mm512_sad_epu8(w2, z));
    }
    if constexpr (kR > 3) {
      w3 = Nibbles(row3 + s * 32, shifts);
      s3 = _mm512_add_epi64(s3, _mm512_sad_epu8(w3, z));
    }
#define TERN_VNNI_ROW(i)                                                  \
  if constexpr (kT > i) {                                                 \
    const __m512i xv = _mm512_load_si512(xq[t + i] + s * kVnniStep);      \
    a##i##0 = _mm512_dpbusd_epi32(a##i##0, w0, xv);                       \
    if constexpr (kR > 1) a##i##1 = _mm512_dpbusd_epi32(a##i##1, w1, xv); \
    if constexpr (kR > 2) a##i##2 = _mm512_dpbusd_epi32(a##i##2, w2, xv); \
    if constexpr (kR > 3) a##i##3 = _mm512_dpbusd_epi32(a##i##3, w3, xv); \
  }
    TERN_VNNI_ROW(0)
    TERN_VNNI_ROW(1)
    TERN_VNNI_ROW(2)
    TERN_VNNI_ROW(3)
#undef TERN_VNNI_ROW
  }
  const int32_t eight_k = 8 * static_cast<int32_t>(c1 - c0);
  const int32_t wsums[4] = {static_cast<int32_t>(Sum64(s0)) - eight_k,  // sums of w
                            static_cast<int32_t>(Sum64(s1)) - eight_k,
                            static_cast<int32_t>(Sum64(s2)) - eight_k,
                            static_cast<int32_t>(Sum64(s3)) - eight_k};
  const __m128i sums[4] = {Reduce4(a00, a01, a02, a03), Reduce4(a10, a11, a12, a13),
                           Reduce4(a20, a21, a22, a23), Reduce4(a30, a31, a32, a33)};
  for (int i = 0; i < kT; ++i) {
    alignas(16) int32_t lanes[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), sums[i]);
    float* out = y + (t + i) * ldy + r;
    for (int j = 0; j < kR; ++j) {
      AddSum(out + j, c0, lanes[j] - 8 * qsum[t + i] - zp[t + i] * wsums[j]);
    }
  }
}

// Rows [t, t + kT) of the tile times every weight row, in groups of four weight rows.
template <int kT>
void VnniRows(const WeightView& w, int64_t c0, int64_t c1, const int8_t (*xq)[kChunk],
              const int32_t* qsum, const int32_t* zp, int64_t t, float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + 4 <= w.rows; r += 4) VnniBlock<kT, 4>(w, r, c0, c1, xq, qsum, zp, t, y, ldy);
  switch (w.rows - r) {
    case 3:
      return VnniBlock<kT, 3>(w, r, c0, c1, xq, qsum, zp, t, y, ldy);
    case 2:
      return VnniBlock<kT, 2>(w, r, c0, c1, xq, qsum, zp, t, y, ldy);
    case 1:
      return VnniBlock<kT, 1>(w, r, c0, c1, xq, qsum, zp, t, y, ldy);
    default:
      return;
  }
}

void VnniLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
  alignas(64) int8_t xq[kTile][kChunk];
  alignas(64) int16_t in_order[kChunk];
  int32_t qsum[kTile], zp[kTile];
  Tiles(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        QuantizeQd8(xt, p, count, in_order);
        int32_t sum = 0;
        for (int64_t c = 0; c < count; c += kVnniStep) {
          for (int64_t j = 0; j < kVnniStep / 2; ++j) {
            const int32_t even = in_order[c + 2 * j] + p.zero_point;
            const int32_t odd = in_order[c + 2 * j + 1] + p.zero_point;
            xq[t][c + j] = static_cast<int8_t>(even);
            xq[t][c + kVnniStep / 2 + j] = static_cast<int8_t>(odd);
            sum += even + odd;
          }
        }
        qsum[t] = sum;
        zp[t] = p.zero_point;
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        int64_t t = 0;
        for (; t + 4 <= tile; t += 4) VnniRows<4>(w, c0, c1, xq, qsum, zp, t, yt, ldy);
        switch (tile - t) {
          case 3:
            return VnniRows<3>(w, c0, c1, xq, qsum, zp, t, yt, ldy);
          case 2:
            return VnniRows<2>(w, c0, c1, xq, qsum, zp, t, yt, ldy);
          case 1:
            return VnniRows<1>(w, c0, c1, xq, qsum, zp, t, yt, ldy);
          default:
            return;
        }
      });
}

bool CpuHas(Qd8Isa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq");
  static const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  return isa == Qd8Isa::kPortable || (isa == Qd8Isa::kAvx2 && avx2) ||
         (isa == Qd8Isa::kAvx512 && avx512) || (isa == Qd8Isa::kAvx512Vnni && vnni);
}
#endif

}  // namespace

bool LinearQd8Takes(const WeightView& w) { return w.dtype == DType::kI8 || w.dtype == DType::kI4; }

bool LinearQd8Runs(Qd8Isa isa, const WeightView& w) {
  if (!LinearQd8Takes(w)) return false;
  if (isa == Qd8Isa::kPortable) return true;
#if defined(__x86_64__)
  if (isa == Qd8Isa::kAvx512Vnni) {  // int4 per row, whole steps of 64 columns
    return CpuHas(isa) && w.dtype == DType::kI4 && PerRow(w) && w.cols % kVnniStep == 0;
  }
  // Whole steps in every block and chunk: AVX2 16 columns (int8) or 32 (int4: 16 bytes split
  // into the even and the odd columns); AVX-512 32.
  const int64_t step = isa == Qd8Isa::kAvx2 && w.dtype == DType::kI8 ? 16 : 32;
  return CpuHas(isa) && w.cols % step == 0 && BlockOf(w) % step == 0;
#else
  return false;
#endif
}

Qd8Isa LinearQd8Best(const WeightView& w) {
  for (Qd8Isa isa : {Qd8Isa::kAvx512Vnni, Qd8Isa::kAvx512, Qd8Isa::kAvx2}) {
    if (LinearQd8Runs(isa, w)) return isa;
  }
  return Qd8Isa::kPortable;
}

void LinearQd8On(Qd8Isa isa, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy) {
  if (!LinearQd8Runs(isa, w)) isa = Qd8Isa::kPortable;  // a CPU or a weight it does not take
#if defined(__x86_64__)
  if (isa == Qd8Isa::kAvx512Vnni) return VnniLoops(x, m, ldx, w, bias, y, ldy);
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
