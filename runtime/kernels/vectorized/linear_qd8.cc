#include "runtime/kernels/vectorized/linear_qd8.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
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
// The loops of a width may bring their own params(x, k) -> Qd8Row (the same values as
// Qd8Params) and per-row epilogue(y row, inv_scale, bias) (the same bits as Qd8Output).
struct ScalarRows {
  Qd8Row params(const float* x, int64_t k) const { return Qd8Params(x, k); }
  void epilogue(const WeightView& w, float* yi, float inv_scale, const float* bias) const {
    const bool fused = Qd8EpilogueFused();
    for (int64_t r = 0; r < w.rows; ++r) {
      int32_t sum;
      std::memcpy(&sum, yi + r, sizeof sum);  // k == 0: the 0.0f of Tiles, 0 as bits
      yi[r] = Qd8Output(sum, inv_scale, w.scales[r], bias != nullptr ? bias + r : nullptr, fused);
    }
  }
};

template <int64_t kRows = kTile, typename Quantize, typename Chunk, typename Rows = ScalarRows>
__attribute__((always_inline)) inline void Tiles(const float* x, int64_t m, int64_t ldx,
                                                 const WeightView& w, const float* bias, float* y,
                                                 int64_t ldy, Quantize quantize, Chunk chunk,
                                                 Rows rows = Rows()) {
  const int64_t n = w.rows, k = w.cols;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int64_t tile = std::min(kRows, m - i0);
    if (k == 0) {  // no chunks: the sums are empty
      for (int64_t t = 0; t < tile; ++t) std::fill_n(y + (i0 + t) * ldy, n, 0.0f);
    }
    Qd8Row p[kRows];
    for (int64_t t = 0; t < tile; ++t) p[t] = rows.params(x + (i0 + t) * ldx, k);
    for (int64_t c0 = 0; c0 < k; c0 += kChunk) {
      const int64_t c1 = std::min(k, c0 + kChunk);
      for (int64_t t = 0; t < tile; ++t) quantize(t, x + (i0 + t) * ldx + c0, p[t], c1 - c0);
      chunk(c0, c1, tile, y + i0 * ldy);
    }
    for (int64_t t = 0; t < tile; ++t) {
      float* yi = y + (i0 + t) * ldy;
      const float inv_scale = p[t].inv_scale;
      if (PerRow(w)) {
        rows.epilogue(w, yi, inv_scale, bias);
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
// of a row, broadcast to both halves of a register, masked to their low nibbles (the even
// columns) in the lower half and to their high nibbles in the upper (the odd columns, times 16:
// no shift), with the nibble's top bit flipped, which makes it w + 8 in 0..15 (times 16 above).
// x is quantized to int8 q (not q - zero point, which needs 9 bits) in the same order: 32 even
// columns, then 32 odd. The upper lanes' sums are multiples of 16 and divided exactly; then
//   sum (q - zp) w = [sum (w + 8) q - 8 sum q] - zp [sum (w + 8) - 8 k].
// Four rows of x times four weight rows at a time (16 accumulators in registers), their sums
// reduced four at a time and corrected, added and scaled as vectors.
constexpr int64_t kVnniStep = 64;  // columns per vpdpbusd

#define TERN_VNNI_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma"

// The upper half of v, and the lower. (maskz forms throughout: GCC 12 reports the plain forms'
// undefined pass-through as uninitialized.)
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m256i Upper(__m512i v) {
  return _mm512_maskz_extracti64x4_epi64(0xF, v, 1);
}
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m256i Lower(__m512i v) {
  return _mm512_maskz_extracti64x4_epi64(0xF, v, 0);
}

// The sums of four accumulators, in lanes 0..3: lanes of the lower half plus those of the upper
// divided by 16.
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
  const __m256i h = _mm256_add_epi32(Lower(t), _mm256_srai_epi32(Upper(t), 4));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The same for four vpsadbw accumulators (int64 lanes), as int32.
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m128i Reduce4Sad(__m512i s0,
                                                                                   __m512i s1,
                                                                                   __m512i s2,
                                                                                   __m512i s3) {
  const __m512i t0 = _mm512_add_epi64(_mm512_maskz_unpacklo_epi64(0xFF, s0, s1),
                                      _mm512_maskz_unpackhi_epi64(0xFF, s0, s1));
  const __m512i t1 = _mm512_add_epi64(_mm512_maskz_unpacklo_epi64(0xFF, s2, s3),
                                      _mm512_maskz_unpackhi_epi64(0xFF, s2, s3));
  const __m256i h0 = _mm256_add_epi64(Lower(t0), _mm256_srai_epi64(Upper(t0), 4));  // s0 s1 s0 s1
  const __m256i h1 = _mm256_add_epi64(Lower(t1), _mm256_srai_epi64(Upper(t1), 4));  // s2 s3 s2 s3
  const __m256i sums = _mm256_add_epi64(_mm256_permute2x128_si256(h0, h1, 0x20),
                                        _mm256_permute2x128_si256(h0, h1, 0x31));
  return _mm256_maskz_cvtepi64_epi32(0xF, sums);
}

// acc += the dot products of w's unsigned bytes with x's signed ones, four per int32 lane. In
// inline assembly because GCC 12 copies the accumulator of _mm512_dpbusd_epi32 to a new register
// (and to the stack, with 16 of them) at every call instead of updating it in place.
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline void Dpbusd(__m512i& acc, __m512i w,
                                                                            __m512i x) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
}

// 32 bytes of a weight row as its 64 nibbles (see above).
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline __m512i Nibbles(
    const uint8_t* bytes, __m512i mask, __m512i flip) {
  const __m512i b = _mm512_maskz_broadcast_i64x4(
      0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  return _mm512_ternarylogic_epi32(b, mask, flip, 0x6A);  // (b & mask) ^ flip
}

// The sums of w over [c0, c1) of weight rows [r, r + kR), from their nibbles as vpdpbusd sees
// them (Nibbles: sums of w + 8, the upper half's times 16), in lanes 0..kR-1.
template <int kR>
__attribute__((target(TERN_VNNI_TARGET))) __m128i VnniWeightSums(const WeightView& w, int64_t r,
                                                                 int64_t c0, int64_t c1) {
  const __m512i mask =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x0F), _mm256_set1_epi8(-16), 1);
  const __m512i flip =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x08), _mm256_set1_epi8(-128), 1);
  const __m512i z = _mm512_setzero_si512();
  __m512i s[4] = {z, z, z, z};
  for (int j = 0; j < kR; ++j) {
    const uint8_t* row = w.row(r + j) + c0 / 2;
    __m512i sum = z;
    for (int64_t c = 0; c < c1 - c0; c += kVnniStep) {
      sum = _mm512_add_epi64(sum, _mm512_sad_epu8(Nibbles(row + c / 2, mask, flip), z));
    }
    s[j] = sum;
  }
  return _mm_sub_epi32(Reduce4Sad(s[0], s[1], s[2], s[3]),
                       _mm_set1_epi32(8 * static_cast<int32_t>(c1 - c0)));
}

// Rows [r, r + kR) of the weight (their sums of w in wsums, or with kSums summed here from the
// nibbles the loop unpacks anyway: a tile of at most four rows, which reads the weights once)
// times rows [t, t + kT) of the tile over the chunk [c0, c1): each output's exact sum of
// (q - zp) w added to the int32 y holds (c0 == 0: stored). The accumulators are named variables,
// not an array, so that they stay in registers (GCC keeps arrays of vectors on the stack); the
// guards on kT and kR are compile-time.
template <int kT, int kR, bool kSums>
__attribute__((target(TERN_VNNI_TARGET))) void VnniBlock(const WeightView& w, int64_t r, int64_t c0,
                                                         int64_t c1, __m128i wsums,
                                                         const int8_t (*xq)[kChunk],
                                                         const int32_t* qsum, const int32_t* zp,
                                                         int64_t t, float* y, int64_t ldy) {
  const __m512i mask =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x0F), _mm256_set1_epi8(-16), 1);
  const __m512i flip =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x08), _mm256_set1_epi8(-128), 1);
  const __m512i z = _mm512_setzero_si512();
  const uint8_t* row0 = w.row(r) + c0 / 2;
  const uint8_t* row1 = kR > 1 ? w.row(r + 1) + c0 / 2 : row0;
  const uint8_t* row2 = kR > 2 ? w.row(r + 2) + c0 / 2 : row0;
  const uint8_t* row3 = kR > 3 ? w.row(r + 3) + c0 / 2 : row0;
  __m512i a00 = z, a01 = z, a02 = z, a03 = z, a10 = z, a11 = z, a12 = z, a13 = z;
  __m512i a20 = z, a21 = z, a22 = z, a23 = z, a30 = z, a31 = z, a32 = z, a33 = z;
  __m512i s0 = z, s1 = z, s2 = z, s3 = z;  // kSums: sums of w + 8 (vpsadbw: 8 bytes per lane)
  const int64_t steps = (c1 - c0) / kVnniStep;
  // kSums (a tile of at most four rows: these weights are read once): the rows 16 on prefetched,
  // a share per step, as the AMX loops do (four rows side by side, 32 bytes of each per step).
  const int64_t ahead = kSums ? std::min<int64_t>(kR, w.rows - (r + 16)) : 0;
  const uint8_t* next = ahead > 0 ? w.row(r + 16) + c0 / 2 : row0;
  const int64_t lines_per_step =
      ahead > 0 ? (ahead * static_cast<int64_t>(w.row_bytes()) / 64 + steps - 1) / steps : 0;
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t line = s * lines_per_step; line < (s + 1) * lines_per_step; ++line) {
      _mm_prefetch(reinterpret_cast<const char*>(next) + 64 * line, _MM_HINT_T0);
    }
    const __m512i w0 = Nibbles(row0 + s * 32, mask, flip);
    const __m512i w1 = kR > 1 ? Nibbles(row1 + s * 32, mask, flip) : z;
    const __m512i w2 = kR > 2 ? Nibbles(row2 + s * 32, mask, flip) : z;
    const __m512i w3 = kR > 3 ? Nibbles(row3 + s * 32, mask, flip) : z;
    if constexpr (kSums) {
      s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
      if constexpr (kR > 1) s1 = _mm512_add_epi64(s1, _mm512_sad_epu8(w1, z));
      if constexpr (kR > 2) s2 = _mm512_add_epi64(s2, _mm512_sad_epu8(w2, z));
      if constexpr (kR > 3) s3 = _mm512_add_epi64(s3, _mm512_sad_epu8(w3, z));
    }
#define TERN_VNNI_ROW(i)                                             \
  if constexpr (kT > i) {                                            \
    const __m512i xv = _mm512_load_si512(xq[t + i] + s * kVnniStep); \
    Dpbusd(a##i##0, w0, xv);                                         \
    if constexpr (kR > 1) Dpbusd(a##i##1, w1, xv);                   \
    if constexpr (kR > 2) Dpbusd(a##i##2, w2, xv);                   \
    if constexpr (kR > 3) Dpbusd(a##i##3, w3, xv);                   \
  }
    TERN_VNNI_ROW(0)
    TERN_VNNI_ROW(1)
    TERN_VNNI_ROW(2)
    TERN_VNNI_ROW(3)
#undef TERN_VNNI_ROW
  }
  if constexpr (kSums) {
    wsums = _mm_sub_epi32(Reduce4Sad(s0, s1, s2, s3),
                          _mm_set1_epi32(8 * static_cast<int32_t>(c1 - c0)));
  }
  const __m128i sums[4] = {Reduce4(a00, a01, a02, a03), Reduce4(a10, a11, a12, a13),
                           Reduce4(a20, a21, a22, a23), Reduce4(a30, a31, a32, a33)};
  constexpr __mmask8 kOut = (1u << kR) - 1;
  for (int i = 0; i < kT; ++i) {
    __m128i v = _mm_sub_epi32(_mm_sub_epi32(sums[i], _mm_set1_epi32(8 * qsum[t + i])),
                              _mm_mullo_epi32(_mm_set1_epi32(zp[t + i]), wsums));
    float* out = y + (t + i) * ldy + r;
    if (c0 != 0) v = _mm_add_epi32(v, _mm_maskz_loadu_epi32(kOut, out));  // the earlier chunks'
    _mm_mask_storeu_epi32(out, kOut, v);
  }
}

// Weight rows [r, r + kR) times every row of the tile, four rows of x at a time (the weight rows'
// bytes read from memory once, then from the cache).
template <int kR>
void VnniWeightRows(const WeightView& w, int64_t r, int64_t c0, int64_t c1,
                    const int8_t (*xq)[kChunk], const int32_t* qsum, const int32_t* zp,
                    int64_t tile, float* y, int64_t ldy) {
  const __m128i none = _mm_setzero_si128();
  switch (tile) {  // one group of x rows: the weights' sums in its loop
    case 4:
      return VnniBlock<4, kR, true>(w, r, c0, c1, none, xq, qsum, zp, 0, y, ldy);
    case 3:
      return VnniBlock<3, kR, true>(w, r, c0, c1, none, xq, qsum, zp, 0, y, ldy);
    case 2:
      return VnniBlock<2, kR, true>(w, r, c0, c1, none, xq, qsum, zp, 0, y, ldy);
    case 1:
      return VnniBlock<1, kR, true>(w, r, c0, c1, none, xq, qsum, zp, 0, y, ldy);
    default:
      break;
  }
  const __m128i wsums = VnniWeightSums<kR>(w, r, c0, c1);
  int64_t t = 0;
  for (; t + 4 <= tile; t += 4) {
    VnniBlock<4, kR, false>(w, r, c0, c1, wsums, xq, qsum, zp, t, y, ldy);
  }
  switch (tile - t) {
    case 3:
      return VnniBlock<3, kR, false>(w, r, c0, c1, wsums, xq, qsum, zp, t, y, ldy);
    case 2:
      return VnniBlock<2, kR, false>(w, r, c0, c1, wsums, xq, qsum, zp, t, y, ldy);
    case 1:
      return VnniBlock<1, kR, false>(w, r, c0, c1, wsums, xq, qsum, zp, t, y, ldy);
    default:
      return;
  }
}

// The tile's sums over [c0, c1) for weight rows [r, rows), four weight rows at a time.
void VnniChunk(const WeightView& w, int64_t c0, int64_t c1, const int8_t (*xq)[kChunk],
               const int32_t* qsum, const int32_t* zp, int64_t tile, float* y, int64_t ldy,
               int64_t r = 0) {
  for (; r + 4 <= w.rows; r += 4) VnniWeightRows<4>(w, r, c0, c1, xq, qsum, zp, tile, y, ldy);
  switch (w.rows - r) {
    case 3:
      return VnniWeightRows<3>(w, r, c0, c1, xq, qsum, zp, tile, y, ldy);
    case 2:
      return VnniWeightRows<2>(w, r, c0, c1, xq, qsum, zp, tile, y, ldy);
    case 1:
      return VnniWeightRows<1>(w, r, c0, c1, xq, qsum, zp, tile, y, ldy);
    default:
      return;
  }
}

// Qd8Params and QuantizeQd8 in 16 lanes, for rows of whole steps of 64 columns.
struct VnniRowsOps {
  __attribute__((target(TERN_VNNI_TARGET))) Qd8Row params(const float* x, int64_t k) const {
    // Lane-wise x < lo ? x : lo is vminps(x, lo) (lo when x is NaN or both are zeros); the lanes
    // hold 0 or values below it (above, for hi), so the order they are combined in is exact.
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    for (int64_t c = 0; c < k; c += 16) {
      const __m512 v = _mm512_loadu_ps(x + c);
      lo = _mm512_maskz_min_ps(0xFFFF, v, lo);
      hi = _mm512_maskz_max_ps(0xFFFF, v, hi);
    }
    alignas(64) float lanes_lo[16], lanes_hi[16];
    _mm512_store_ps(lanes_lo, lo);
    _mm512_store_ps(lanes_hi, hi);
    float l = 0.0f, h = 0.0f;
    for (int i = 0; i < 16; ++i) {
      l = lanes_lo[i] < l ? lanes_lo[i] : l;
      h = lanes_hi[i] > h ? lanes_hi[i] : h;
    }
    return Qd8ParamsOfRange(l, h);
  }
  __attribute__((target(TERN_VNNI_TARGET))) void epilogue(const WeightView& w, float* yi,
                                                          float inv_scale,
                                                          const float* bias) const {
    // Qd8Output with the fused epilogue (every AVX-512 CPU has FMA): float(sum) * inv_scale,
    // then one fma with the row's scale and the bias.
    const __m512 inv = _mm512_set1_ps(inv_scale);
    for (int64_t r = 0; r < w.rows; r += 16) {
      const __mmask16 k =
          w.rows - r >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (w.rows - r)) - 1);
      const __m512 scaled =
          _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(k, _mm512_maskz_loadu_epi32(k, yi + r)), inv);
      const __m512 scales = _mm512_maskz_loadu_ps(k, w.scales + r);
      const __m512 out = bias != nullptr
                             ? _mm512_fmadd_ps(scaled, scales, _mm512_maskz_loadu_ps(k, bias + r))
                             : _mm512_mul_ps(scaled, scales);
      _mm512_mask_storeu_ps(yi + r, k, out);
    }
  }
};

// count values of a row (a whole number of steps) quantized as QuantizeQd8 quantizes them, as q
// (int8) in VNNI's order; returns their sum.
__attribute__((target(TERN_VNNI_TARGET))) int32_t QuantizeVnni(const float* x, Qd8Row p,
                                                               int64_t count, int8_t* out) {
  const __m512 multiplier = _mm512_set1_ps(1.0f / p.inv_scale);
  const __m512 max_less_zero_point = _mm512_set1_ps(static_cast<float>(127 - p.zero_point));
  const __m512 floor = _mm512_set1_ps(-383.0f);
  const __m512i zero_point = _mm512_set1_epi32(p.zero_point), qmin = _mm512_set1_epi32(-128);
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  __m512i sum = _mm512_setzero_si512();
  for (int64_t c = 0; c < count; c += kVnniStep) {
    __m512i q[4];
    for (int h = 0; h < 4; ++h) {
      __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + c + 16 * h), multiplier);
      v = _mm512_maskz_min_ps(0xFFFF, v,
                              max_less_zero_point);  // a NaN becomes the bound, as in QuantizeQd8
      v = _mm512_maskz_max_ps(0xFFFF, v, floor);
      q[h] = _mm512_maskz_max_epi32(
          0xFFFF,
          _mm512_add_epi32(_mm512_maskz_cvt_roundps_epi32(
                               0xFFFF, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                           zero_point),
          qmin);
      sum = _mm512_add_epi32(sum, q[h]);
    }
    int8_t* o = out + c;
    _mm_store_si128(
        reinterpret_cast<__m128i*>(o),
        _mm512_maskz_cvtepi32_epi8(0xFFFF, _mm512_permutex2var_epi32(q[0], even, q[1])));
    _mm_store_si128(
        reinterpret_cast<__m128i*>(o + 16),
        _mm512_maskz_cvtepi32_epi8(0xFFFF, _mm512_permutex2var_epi32(q[2], even, q[3])));
    _mm_store_si128(reinterpret_cast<__m128i*>(o + 32),
                    _mm512_maskz_cvtepi32_epi8(0xFFFF, _mm512_permutex2var_epi32(q[0], odd, q[1])));
    _mm_store_si128(reinterpret_cast<__m128i*>(o + 48),
                    _mm512_maskz_cvtepi32_epi8(0xFFFF, _mm512_permutex2var_epi32(q[2], odd, q[3])));
  }
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, sum);
  int32_t total = 0;
  for (int i = 0; i < 16; ++i) total += lanes[i];
  return total;
}

void VnniLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
  alignas(64) int8_t xq[kTile][kChunk];
  int32_t qsum[kTile], zp[kTile];
  Tiles(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        qsum[t] = QuantizeVnni(xt, p, count, xq[t]);
        zp[t] = p.zero_point;
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        VnniChunk(w, c0, c1, xq, qsum, zp, tile, yt, ldy);
      },
      VnniRowsOps());
}

// AMX (Intel's tile unit, Sapphire Rapids on): tdpbusd multiplies a tile of 16 rows x 64
// unsigned bytes by one of 16 x 64 signed bytes into 16 x 16 int32 sums, 16384 products per
// instruction, where XNNPACK's int8 GEMM runs its AMX kernels and VNNI's 64 per instruction fall
// 3-10x behind it from 16 rows of x on. The weights are the unsigned tiles (A): 16 weight rows'
// nibbles as w + 8, unpacked per 64 columns into a buffer (shifted, not times 16: the tile unit
// sums across the halves), the next step's unpacked while the tile unit works on this one's; x
// the signed ones (B): 15 rows of q transposed into 4-byte groups (B[kk][4 j + i] = q of row j
// at column 4 kk + i, in VNNI's column order), the 16th column all ones, so that the same
// instruction sums each weight row's w + 8 (the correction of the VNNI loops, above). Two weight
// tiles times two x tiles (30 rows) per step: four independent sums keep the unit busy. A tile of
// x with fewer than 8 rows takes the VNNI loops (the same exact sums, so the same bits).
// Stack: the tile of x twice (as rows and transposed), 62 KiB.
constexpr int64_t kAmxB = 15;            // rows of x per B tile; its 16th column is ones
constexpr int64_t kAmxRows = 2 * kAmxB;  // rows of x per tile
constexpr int64_t kAmxMinRows = 8;       // fewer: the VNNI loops
constexpr int64_t kAmxSteps = kChunk / kVnniStep;

#define TERN_AMX_TARGET TERN_VNNI_TARGET ",amx-tile,amx-int8"

// Whether this process may use the tile unit: Linux grants the (large) tile state to a process
// that asks for it (arch_prctl ARCH_REQ_XCOMP_PERM); asked once.
bool AmxPermitted() {
#if defined(__linux__)
  static const bool permitted = [] {
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted;
#else
  return false;
#endif
}

// The tile configuration: palette 1, tiles 0-7 all 16 rows of 64 bytes (0-3: the sums of weight
// tile g times x tile b at 2 g + b; 4, 5: the weight tiles; 6, 7: the x tiles).
struct alignas(64) AmxConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// The tile instructions, with the memory they read or write made known to the compiler
// (GCC 12's _tile_loadd / tdpbusd macros declare none, so it could move the buffers' stores past
// them).
#define TERN_TILE_LOAD(t, base) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(int64_t{64}) : "memory")
#define TERN_TILE_STORE(t, base) \
  asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(int64_t{64}) : "memory")
#define TERN_TILE_ZERO(t) asm volatile("tilezero %%tmm" #t ::)
#define TERN_TILE_DPBUSD(c, a, b) asm volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

// The 16 x 16 matrix of 4-byte groups at rows[i] (64 bytes each), transposed: out[j] holds
// group j of every row (lane i: rows[i]'s). Unpacks of 32 and 64 bits within 128-bit lanes,
// then two shuffles of lanes.
__attribute__((target(TERN_VNNI_TARGET))) void Transpose16(const void* const* rows, __m512i* out) {
  __m512i a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    const __m512i r0 = _mm512_loadu_si512(rows[i]), r1 = _mm512_loadu_si512(rows[i + 1]);
    a[i] = _mm512_maskz_unpacklo_epi32(0xFFFF, r0, r1);
    a[i + 1] = _mm512_maskz_unpackhi_epi32(0xFFFF, r0, r1);
  }
  for (int g = 0; g < 16; g += 4) {  // b[g + q], 128-bit lane L: rows g..g+3 at group 4 L + q
    b[g] = _mm512_maskz_unpacklo_epi64(0xFF, a[g], a[g + 2]);
    b[g + 1] = _mm512_maskz_unpackhi_epi64(0xFF, a[g], a[g + 2]);
    b[g + 2] = _mm512_maskz_unpacklo_epi64(0xFF, a[g + 1], a[g + 3]);
    b[g + 3] = _mm512_maskz_unpackhi_epi64(0xFF, a[g + 1], a[g + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    const __m512i x = _mm512_maskz_shuffle_i32x4(0xFFFF, b[q], b[4 + q], 0x88);
    const __m512i y = _mm512_maskz_shuffle_i32x4(0xFFFF, b[q], b[4 + q], 0xDD);
    const __m512i x2 = _mm512_maskz_shuffle_i32x4(0xFFFF, b[8 + q], b[12 + q], 0x88);
    const __m512i y2 = _mm512_maskz_shuffle_i32x4(0xFFFF, b[8 + q], b[12 + q], 0xDD);
    out[q] = _mm512_maskz_shuffle_i32x4(0xFFFF, x, x2, 0x88);
    out[8 + q] = _mm512_maskz_shuffle_i32x4(0xFFFF, x, x2, 0xDD);
    out[4 + q] = _mm512_maskz_shuffle_i32x4(0xFFFF, y, y2, 0x88);
    out[12 + q] = _mm512_maskz_shuffle_i32x4(0xFFFF, y, y2, 0xDD);
  }
}

// Weight rows [r, r + count) (count <= 16; the rest of the tile zeros) at byte offset `off`:
// their 64 nibbles as w + 8, row after row.
__attribute__((target(TERN_VNNI_TARGET))) inline void AmxUnpack(const WeightView& w, int64_t r,
                                                                int64_t count, int64_t off,
                                                                uint8_t* a) {
  const __m512i shifts =
      _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_setzero_si512(), _mm512_set1_epi16(4));
  const __m512i low = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  int64_t j = 0;
  for (; j < count; ++j) {
    const uint8_t* bytes = w.row(r + j) + off;
    const __m512i b = _mm512_maskz_broadcast_i64x4(
        0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
    _mm512_store_si512(a + j * 64,
                       _mm512_ternarylogic_epi32(_mm512_srlv_epi16(b, shifts), low, eight, 0x6A));
  }
  for (; j < 16; ++j) _mm512_store_si512(a + j * 64, _mm512_setzero_si512());
}

// The sums of weight tile g (rows [r, r + count)) times x tile b (rows [15 b, 15 b + xrows) of
// the tile), as stored from the tile unit (c[n][j]; column 15: the weight rows' sums of w + 8):
// corrected to sums of (q - zp) w and added to the int32 y holds (c0 == 0: stored).
__attribute__((target(TERN_VNNI_TARGET))) void AmxStore(const int32_t (*c)[16], int64_t count,
                                                        int64_t b, int64_t xrows, int64_t c0,
                                                        int64_t c1, const int32_t* qsum,
                                                        const int32_t* zp, float* y, int64_t ldy) {
  const void* rows[16];
  for (int n = 0; n < 16; ++n) rows[n] = c[n];
  __m512i sums[16];  // sums[j], lane n: weight row n times x row j
  Transpose16(rows, sums);
  const __m512i wsum =
      _mm512_sub_epi32(sums[kAmxB], _mm512_set1_epi32(8 * static_cast<int32_t>(c1 - c0)));
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  for (int64_t j = 0; j < xrows; ++j) {
    const int64_t t = kAmxB * b + j;
    __m512i v = _mm512_sub_epi32(_mm512_sub_epi32(sums[j], _mm512_set1_epi32(8 * qsum[t])),
                                 _mm512_mullo_epi32(_mm512_set1_epi32(zp[t]), wsum));
    float* out = y + t * ldy;
    if (c0 != 0) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, out));
    _mm512_mask_storeu_epi32(out, mask, v);
  }
}

// Weight rows [r, r + count) (count <= 16 * kW) times the tile's x tiles (kX of them, the last
// with xrows_last rows) over the chunk [c0, c1) of xb's steps.
template <int kW, int kX>
__attribute__((target(TERN_AMX_TARGET))) void AmxGroup(const WeightView& w, int64_t r,
                                                       int64_t count, int64_t c0, int64_t c1,
                                                       const int8_t (*xb)[2][16][64],
                                                       int64_t xrows_last, const int32_t* qsum,
                                                       const int32_t* zp, float* y, int64_t ldy) {
  alignas(64) uint8_t a[2][kW][16][64];  // this step's unpacked weight tiles, and the next's
  alignas(64) int32_t c[16][16];
  const int64_t steps = (c1 - c0) / kVnniStep;
  const int64_t count0 = std::min<int64_t>(16, count), count1 = count - count0;
  auto unpack = [&](int64_t s) {
    const int64_t off = (c0 + s * kVnniStep) / 2;
    AmxUnpack(w, r, count0, off, a[s & 1][0][0]);
    if (kW > 1) AmxUnpack(w, r + 16, count1, off, a[s & 1][kW - 1][0]);
  };
  const int64_t next_rows = std::min<int64_t>(32, w.rows - (r + count));
  const uint8_t* next = w.row(r + count) + c0 / 2;  // (not read when next_rows is 0)
  const int64_t lines_per_step =
      next_rows > 0 ? (next_rows * static_cast<int64_t>(w.row_bytes()) / 64 + steps - 1) / steps
                    : 0;
  TERN_TILE_ZERO(0);
  TERN_TILE_ZERO(1);
  TERN_TILE_ZERO(2);
  TERN_TILE_ZERO(3);
  unpack(0);
  for (int64_t s = 0; s < steps; ++s) {
    TERN_TILE_LOAD(6, xb[s][0][0]);
    if (kX > 1) TERN_TILE_LOAD(7, xb[s][1][0]);
    TERN_TILE_LOAD(4, a[s & 1][0][0]);
    TERN_TILE_DPBUSD(0, 4, 6);
    if (kX > 1) TERN_TILE_DPBUSD(1, 4, 7);
    if (kW > 1) {
      TERN_TILE_LOAD(5, a[s & 1][kW - 1][0]);
      TERN_TILE_DPBUSD(2, 5, 6);
      if (kX > 1) TERN_TILE_DPBUSD(3, 5, 7);
    }
    // The next step's weights after this step's tile loads: a tile load waits for the stores
    // before it to reach the cache, so these have the unit's whole step to get there.
    if (s + 1 < steps) unpack(s + 1);
    // The next group's weight rows (a contiguous block), a share per step: this group reads its
    // 32 rows side by side, 32 bytes of each per step, which the hardware prefetchers do not
    // run ahead of.
    for (int64_t line = s * lines_per_step; line < (s + 1) * lines_per_step; ++line) {
      _mm_prefetch(reinterpret_cast<const char*>(next) + 64 * line, _MM_HINT_T0);
    }
  }
  const int64_t xrows0 = kX > 1 ? kAmxB : xrows_last;
  TERN_TILE_STORE(0, c[0]);
  AmxStore(c, count0, 0, xrows0, c0, c1, qsum, zp, y + r, ldy);
  if (kX > 1) {
    TERN_TILE_STORE(1, c[0]);
    AmxStore(c, count0, 1, xrows_last, c0, c1, qsum, zp, y + r, ldy);
  }
  if (kW > 1) {
    TERN_TILE_STORE(2, c[0]);
    AmxStore(c, count1, 0, xrows0, c0, c1, qsum, zp, y + r + 16, ldy);
    if (kX > 1) {
      TERN_TILE_STORE(3, c[0]);
      AmxStore(c, count1, 1, xrows_last, c0, c1, qsum, zp, y + r + 16, ldy);
    }
  }
}

// The tile's sums over [c0, c1) for every weight row: x transposed into xb once, then weight
// rows 32 at a time (the last group padded with zero rows).
template <int kX>
void AmxChunk(const WeightView& w, int64_t c0, int64_t c1, const int8_t (*xb)[2][16][64],
              int64_t xrows_last, const int32_t* qsum, const int32_t* zp, float* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + 16 < w.rows; r += 32) {
    AmxGroup<2, kX>(w, r, std::min<int64_t>(32, w.rows - r), c0, c1, xb, xrows_last, qsum, zp, y,
                    ldy);
  }
  if (r < w.rows) {
    AmxGroup<1, kX>(w, r, w.rows - r, c0, c1, xb, xrows_last, qsum, zp, y, ldy);
  }
}

// Rows [0, tile) of x (xq, steps of 64 columns) as the tile unit's B: x tile b's rows 15 b ..
// 15 b + 14 (zeros past the tile's rows), then a row of ones, transposed into 4-byte groups.
__attribute__((target(TERN_VNNI_TARGET))) void AmxTransposeX(const int8_t (*xq)[kChunk],
                                                             int64_t tile, int64_t xtiles,
                                                             int64_t steps,
                                                             int8_t (*xb)[2][16][64]) {
  alignas(64) static const int8_t kZeros[64] = {};
  alignas(64) static const int8_t kOnes[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t b = 0; b < xtiles; ++b) {
      const void* rows[16];
      for (int64_t j = 0; j < kAmxB; ++j) {
        const int64_t t = kAmxB * b + j;
        rows[j] = t < tile ? static_cast<const void*>(xq[t] + s * kVnniStep) : kZeros;
      }
      rows[kAmxB] = kOnes;
      __m512i groups[16];
      Transpose16(rows, groups);
      for (int kk = 0; kk < 16; ++kk) _mm512_store_si512(xb[s][b][kk], groups[kk]);
    }
  }
}

__attribute__((target(TERN_AMX_TARGET))) void AmxLoops(const float* x, int64_t m, int64_t ldx,
                                                       const WeightView& w, const float* bias,
                                                       float* y, int64_t ldy) {
  alignas(64) int8_t xq[kAmxRows][kChunk];
  alignas(64) int8_t xb[kAmxSteps][2][16][64];  // per step: the x tiles as the tile unit's B
  int32_t qsum[kAmxRows], zp[kAmxRows];
  static const AmxConfig config;
  _tile_loadconfig(&config);
  Tiles<kAmxRows>(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        qsum[t] = QuantizeVnni(xt, p, count, xq[t]);
        zp[t] = p.zero_point;
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        if (tile < kAmxMinRows) return VnniChunk(w, c0, c1, xq, qsum, zp, tile, yt, ldy);
        const int64_t xtiles = tile > kAmxB ? 2 : 1;
        const int64_t xrows_last = tile - kAmxB * (xtiles - 1);
        AmxTransposeX(xq, tile, xtiles, (c1 - c0) / kVnniStep, xb);
        if (xtiles > 1) return AmxChunk<2>(w, c0, c1, xb, xrows_last, qsum, zp, yt, ldy);
        AmxChunk<1>(w, c0, c1, xb, xrows_last, qsum, zp, yt, ldy);
      },
      VnniRowsOps());
  _tile_release();
}

bool CpuHas(Qd8Isa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq");
  static const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  static const bool amx = vnni && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("amx-tile") &&
                          __builtin_cpu_supports("amx-int8") && AmxPermitted();
  return isa == Qd8Isa::kPortable || (isa == Qd8Isa::kAvx2 && avx2) ||
         (isa == Qd8Isa::kAvx512 && avx512) || (isa == Qd8Isa::kAvx512Vnni && vnni) ||
         (isa == Qd8Isa::kAmx && amx);
}
#endif

}  // namespace

bool LinearQd8Takes(const WeightView& w) { return w.dtype == DType::kI8 || w.dtype == DType::kI4; }

bool LinearQd8Runs(Qd8Isa isa, const WeightView& w) {
  if (!LinearQd8Takes(w)) return false;
  if (isa == Qd8Isa::kPortable) return true;
#if defined(__x86_64__)
  if (isa == Qd8Isa::kAvx512Vnni || isa == Qd8Isa::kAmx) {  // int4 per row, steps of 64 columns
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
  for (Qd8Isa isa : {Qd8Isa::kAmx, Qd8Isa::kAvx512Vnni, Qd8Isa::kAvx512, Qd8Isa::kAvx2}) {
    if (LinearQd8Runs(isa, w)) return isa;
  }
  return Qd8Isa::kPortable;
}

const char* Qd8IsaName(Qd8Isa isa) {
  switch (isa) {
    case Qd8Isa::kAmx:
      return "AMX (below 8 rows AVX-512 VNNI)";
    case Qd8Isa::kAvx512Vnni:
      return "AVX-512 VNNI";
    case Qd8Isa::kAvx512:
      return "AVX-512";
    case Qd8Isa::kAvx2:
      return "AVX2";
    case Qd8Isa::kPortable:
      break;
  }
  return "portable";
}

void LinearQd8On(Qd8Isa isa, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy) {
  if (!LinearQd8Runs(isa, w)) isa = Qd8Isa::kPortable;  // a CPU or a weight it does not take
#if defined(__x86_64__)
  if (isa == Qd8Isa::kAmx) return AmxLoops(x, m, ldx, w, bias, y, ldy);
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
