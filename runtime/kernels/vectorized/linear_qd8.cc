#include "runtime/kernels/vectorized/linear_qd8.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/kernels/vectorized/linear_qd8_amx.h"
#include "runtime/kernels/vectorized/linear_qd8_amx_rows.h"
#include "runtime/kernels/vectorized/linear_qd8_tiles.h"
#include "runtime/kernels/vectorized/linear_qd8_vnni.h"
#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/vectorized/qd8.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

using namespace qd8_loops;  // NOLINT: the loops' shared pieces

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
      return "AMX (below 8 rows AVX-512 VNNI; from 32 with scratch on rows quantized once)";
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
  if (w.layout == WeightLayout::kSignPanels) return SignPanelsLinear(x, m, ldx, w, bias, y, ldy);
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

namespace {

constexpr size_t kRowsAlign = 64;

// Rows of a pass padded to whole pairs of the tile unit's 16-row tiles.
int64_t PaddedRows(int64_t m) { return (std::min(m, kQd8PassRows) + 31) / 32 * 32; }

}  // namespace

size_t LinearQd8ScratchBytes(const WeightView& w, int64_t max_rows) {
  if (max_rows < kQd8RowsMin || !LinearQd8Runs(Qd8Isa::kAmx, w) || w.cols == 0) return 0;
  const size_t rows = static_cast<size_t>(PaddedRows(max_rows));
  // q, then the zero points and inverse scales, each 64-byte aligned (the scratch too).
  return rows * static_cast<size_t>(w.cols) +
         2 * ((rows * 4 + kRowsAlign - 1) / kRowsAlign * kRowsAlign);
}

bool LinearQd8TakesRows(const WeightView& w, int64_t m, size_t scratch_bytes) {
  const size_t need = LinearQd8ScratchBytes(w, m);
  return need > 0 && need <= scratch_bytes;
}

QuantizedRows QuantizedRowsIn(void* scratch, int64_t m, int64_t k) {
  QuantizedRows rows;
  const size_t padded = static_cast<size_t>(PaddedRows(m));
  auto* bytes = static_cast<uint8_t*>(scratch);
  rows.q = reinterpret_cast<int8_t*>(bytes);
  bytes += padded * static_cast<size_t>(k);
  rows.zero_point = reinterpret_cast<int32_t*>(bytes);
  bytes += (padded * 4 + kRowsAlign - 1) / kRowsAlign * kRowsAlign;
  rows.inv_scale = reinterpret_cast<float*>(bytes);
  rows.m = std::min(m, kQd8PassRows);
  rows.k = k;
  rows.ld = k;
  return rows;
}

void QuantizeQd8Rows(const float* x, int64_t ldx, int64_t i0, int64_t i1,
                     const QuantizedRows& rows) {
#if defined(__x86_64__)
  AmxQuantizeRows(x, ldx, i0, i1, rows);
#else
  (void)x, (void)ldx, (void)i0, (void)i1, (void)rows;
#endif
}

void LinearQd8Rows(const QuantizedRows& x, const WeightView& w, const float* bias, float* y,
                   int64_t ldy) {
#if defined(__x86_64__)
  AmxRows(x, w, bias, y, ldy);
#else
  (void)x, (void)w, (void)bias, (void)y, (void)ldy;
#endif
}

void LinearQd8WithScratch(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                          const float* bias, float* y, int64_t ldy, void* scratch,
                          size_t scratch_bytes) {
  if (!LinearQd8TakesRows(w, m, scratch_bytes)) return LinearQd8(x, m, ldx, w, bias, y, ldy);
  for (int64_t i0 = 0; i0 < m; i0 += kQd8PassRows) {
    const QuantizedRows rows = QuantizedRowsIn(scratch, m - i0, w.cols);
    QuantizeQd8Rows(x + i0 * ldx, ldx, 0, rows.m, rows);
    LinearQd8Rows(rows, w, bias, y + i0 * ldy, ldy);
  }
}

}  // namespace tern::vec
