#include "runtime/kernels/vectorized/linear_qd8_amx_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "runtime/kernels/vectorized/linear_qd8_amx_tile.h"
#include "runtime/kernels/vectorized/linear_qd8_tiles.h"
#include "runtime/kernels/vectorized/linear_qd8_vnni.h"

namespace tern::vec::qd8_loops {

namespace {

// The AMX loops on rows of x quantized once (vec::QuantizedRows). The other way round from the
// loops on tiles of x (linear_qd8_amx.cc): x is the tile unit's A, 16 rows of q read straight from
// the quantized rows (no transpose), and the weights its B, 16 weight rows' signed w transposed
// into 4-byte groups. B costs a transpose where that loop's A costs an unpack only, but it is made
// once per 32 weight rows and 1024 columns and serves every row of the pass (up to 256), and the
// sums come out as y lays them out (x row by weight row): no transpose of every 16 x 16 block of
// sums, which with the unpacks took a third of that loop's time at 512 rows. tdpbssd (signed x
// signed): sum q w; the correction is - zp sum w, with each weight row's sum of w made with B.
// Tiles: 0-3 the sums of x tile a times weight tile g at 2 g + a; 4, 5 the weight tiles; 6, 7
// the x tiles. Stack: the weights' B for one chunk, 32 KiB, and 4 KiB of sums.
constexpr int64_t kSteps = kChunk / kVnniStep;

// Weight rows [r, r + count) (count <= 16; the rest zeros) over the steps of the chunk at c0, as
// B (b[s]: step s's 16 x 16 groups) of signed w; wsum lane n: row n's sum of w over the chunk.
__attribute__((target(TERN_VNNI_TARGET))) void WeightsB(const WeightView& w, int64_t r,
                                                        int64_t count, int64_t c0, int64_t steps,
                                                        int8_t (*b)[2][16][64], int g,
                                                        __m512i* wsum) {
  // 32 bytes broadcast to both halves; the low nibbles (the even columns) below, the high ones
  // above, each as (nibble ^ 8) - 8: the two's complement w. The order of QuantizeVnni's q.
  const __m512i shifts =
      _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_setzero_si512(), _mm512_set1_epi16(4));
  const __m512i low = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t off = (c0 + s * kVnniStep) / 2;
    __m512i rows[16], groups[16];
    for (int64_t j = 0; j < 16; ++j) {
      if (j >= count) {
        rows[j] = _mm512_setzero_si512();
        continue;
      }
      const __m512i bytes = _mm512_maskz_broadcast_i64x4(
          0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.row(r + j) + off)));
      rows[j] = _mm512_sub_epi8(
          _mm512_ternarylogic_epi32(_mm512_srlv_epi16(bytes, shifts), low, eight, 0x6A), eight);
    }
    Transpose16(rows, groups);
    for (int kk = 0; kk < 16; ++kk) {
      _mm512_store_si512(b[s][g][kk], groups[kk]);
      sum = _mm512_dpbusd_epi32(sum, ones, groups[kk]);
    }
  }
  *wsum = sum;
}

// Sums of x tile a (rows i0 + 16 a ..) times weight tile g (c: as stored from the tile unit)
// corrected, added to the int32 y holds (c0 > 0), and on the chunk that ends the row scaled as
// VnniRowsOps::epilogue scales them (the same operations, so the same bits).
__attribute__((target(TERN_VNNI_TARGET))) void StoreSums(const int32_t (*c)[16], __m512i wsum,
                                                         int64_t count, const QuantizedRows& x,
                                                         int64_t i, int64_t rows, int64_t c0,
                                                         bool last, const float* scales,
                                                         const float* bias, float* y, int64_t ldy) {
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  const __m512 s = _mm512_maskz_loadu_ps(mask, scales);
  const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_setzero_ps();
  for (int64_t j = 0; j < rows; ++j) {
    float* out = y + (i + j) * ldy;
    // zp wsum in one vpmaddwd: each lane's wsum fits 16 bits (|w| <= 8, 1024 columns), and the
    // upper half of each lane of zp is zero.
    const __m512i zp = _mm512_set1_epi32(x.zero_point[i + j] & 0xFFFF);
    __m512i v = _mm512_sub_epi32(_mm512_load_si512(c[j]), _mm512_madd_epi16(wsum, zp));
    if (c0 != 0) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, out));
    if (!last) {
      _mm512_mask_storeu_epi32(out, mask, v);
      continue;
    }
    const __m512 scaled =
        _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(mask, v), _mm512_set1_ps(x.inv_scale[i + j]));
    _mm512_mask_storeu_ps(
        out, mask, bias != nullptr ? _mm512_fmadd_ps(scaled, s, b) : _mm512_mul_ps(scaled, s));
  }
}

// Weight rows [r, r + count) (count <= 16 kW) times every row of x over the chunk [c0, c1).
template <int kW>
__attribute__((target(TERN_AMX_TARGET))) void Group(const QuantizedRows& x, const WeightView& w,
                                                    int64_t r, int64_t count, int64_t c0,
                                                    int64_t c1, const float* bias, float* y,
                                                    int64_t ldy) {
  alignas(64) int8_t b[kSteps][2][16][64];
  alignas(64) int32_t c[2][4][16][16];  // two pairs' sums (the scaling lags a pair behind)
  const int64_t steps = (c1 - c0) / kVnniStep;
  const int64_t count0 = std::min<int64_t>(16, count), count1 = count - count0;
  __m512i wsum[2];
  WeightsB(w, r, count0, c0, steps, b, 0, &wsum[0]);
  if (kW > 1) WeightsB(w, r + 16, count1, c0, steps, b, 1, &wsum[1]);
  const bool last = c1 == x.k;
  // The next group's rows of this chunk, a share per pair of x tiles (up to the weight's end).
  const RowsAhead next = RowsAheadOf(w, r + count, std::min<int64_t>(32, w.rows - (r + count)), c0);
  const int64_t pairs = (x.m + 31) / 32;
  // Pair p's sums, as stored from the tile unit, are scaled into y after pair p + 1's tile
  // instructions are issued: the tile unit works through those while the vector units do this
  // (one pair after the other, the scaling took a third of the loop's time).
  auto store = [&](int64_t p) {
    const int32_t(*cp)[16][16] = c[p & 1];
    for (int g = 0; g < kW; ++g) {
      const int64_t n0 = r + 16 * g, cn = g == 0 ? count0 : count1;
      for (int a = 0; a < 2; ++a) {
        const int64_t i = 32 * p + 16 * a, rows = std::min<int64_t>(16, x.m - i);
        if (rows <= 0) continue;
        StoreSums(cp[2 * g + a], wsum[g], cn, x, i, rows, c0, last, w.scales + n0,
                  bias != nullptr ? bias + n0 : nullptr, y + n0, ldy);
      }
    }
  };
  for (int64_t p = 0; p < pairs; ++p) {
    const int8_t* a0 = x.q + 32 * p * x.ld + c0;
    const int8_t* a1 = a0 + 16 * x.ld;
    TERN_TILE_ZERO(0);
    TERN_TILE_ZERO(1);
    TERN_TILE_ZERO(2);
    TERN_TILE_ZERO(3);
    for (int64_t s = 0; s < steps; ++s) {
      TERN_TILE_LOAD_ROWS(6, a0 + s * kVnniStep, x.ld);
      TERN_TILE_LOAD_ROWS(7, a1 + s * kVnniStep, x.ld);
      TERN_TILE_LOAD(4, b[s][0][0]);
      TERN_TILE_DPBSSD(0, 6, 4);
      TERN_TILE_DPBSSD(1, 7, 4);
      if (kW > 1) {
        TERN_TILE_LOAD(5, b[s][1][0]);
        TERN_TILE_DPBSSD(2, 6, 5);
        TERN_TILE_DPBSSD(3, 7, 5);
      }
    }
    PrefetchShare(next.p, next.bytes, p, pairs);
    if (p > 0) store(p - 1);
    int32_t(*cp)[16][16] = c[p & 1];
    TERN_TILE_STORE(0, cp[0][0]);
    TERN_TILE_STORE(1, cp[1][0]);
    if (kW > 1) {
      TERN_TILE_STORE(2, cp[2][0]);
      TERN_TILE_STORE(3, cp[3][0]);
    }
  }
  store(pairs - 1);
}

}  // namespace

__attribute__((target(TERN_VNNI_TARGET))) void AmxQuantizeRows(const float* x, int64_t ldx,
                                                               int64_t i0, int64_t i1,
                                                               const QuantizedRows& rows) {
  for (int64_t i = i0; i < i1; ++i) {
    const float* xi = x + i * ldx;
    const Qd8Row p = VnniRowsOps().params(xi, rows.k);
    QuantizeVnni(xi, p, rows.k, rows.q + i * rows.ld);
    rows.zero_point[i] = p.zero_point;
    rows.inv_scale[i] = p.inv_scale;
  }
  if (i1 == rows.m && i0 < i1) {  // one range ends at m (others there are empty)
    const int64_t padded = (rows.m + 31) / 32 * 32;
    std::memset(rows.q + rows.m * rows.ld, 0, static_cast<size_t>((padded - rows.m) * rows.ld));
  }
}

__attribute__((target(TERN_AMX_TARGET))) void AmxRows(const QuantizedRows& x, const WeightView& w,
                                                      const float* bias, float* y, int64_t ldy) {
  static const AmxConfig config;
  _tile_loadconfig(&config);
  for (int64_t c0 = 0; c0 < x.k; c0 += kChunk) {
    const int64_t c1 = std::min(x.k, c0 + kChunk);
    int64_t r = 0;
    for (; r + 16 < w.rows; r += 32) {
      Group<2>(x, w, r, std::min<int64_t>(32, w.rows - r), c0, c1, bias, y, ldy);
    }
    if (r < w.rows) Group<1>(x, w, r, w.rows - r, c0, c1, bias, y, ldy);
  }
  _tile_release();
}

}  // namespace tern::vec::qd8_loops
#endif
