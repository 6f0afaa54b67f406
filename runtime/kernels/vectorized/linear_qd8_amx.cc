#include "runtime/kernels/vectorized/linear_qd8_amx.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "runtime/kernels/vectorized/linear_qd8_amx_tile.h"
#include "runtime/kernels/vectorized/linear_qd8_tiles.h"
#include "runtime/kernels/vectorized/linear_qd8_vnni.h"

namespace tern::vec::qd8_loops {

namespace {

// AMX (Intel's tile unit, Sapphire Rapids on): tdpbusd multiplies a tile of 16 rows x 64
// unsigned bytes by one of 16 x 64 signed bytes into 16 x 16 int32 sums, 16384 products per
// instruction, where XNNPACK's int8 GEMM runs its AMX kernels and VNNI's 64 per instruction fall
// 3-10x behind it from 16 rows of x on. The weights are the unsigned tiles (A): 16 weight rows'
// nibbles as w + 8, unpacked per 64 columns into a buffer (shifted, not times 16: the tile unit
// sums across the halves), the next step's unpacked while the tile unit works on this one's; x
// the signed ones (B): 15 rows of q transposed into 4-byte groups (B[kk][4 j + i] = q of row j
// at column 4 kk + i, in VNNI's column order), the 16th column all ones, so that the same
// instruction sums each weight row's w + 8 (the correction of the VNNI loops,
// linear_qd8_vnni.cc). Two weight tiles times two x tiles (30 rows) per step: four independent
// sums keep the unit busy. A tile of x with fewer than 8 rows takes the VNNI loops (the same exact
// sums, so the same bits).
// Chunks of 2048 columns (the other loops' kChunk is 1024): a weight group reads its rows in one
// pass up to 2048 columns. In passes of 1024, 512 x 2048 at 16 rows took 80 us against 55 for
// 2048 x 512 (the same bytes and sums); in one pass 60 us (`tern bench --linear --working-set
// 0`). Each pass also prefetched the next group's whole rows again: the likely cost, not
// measured apart.
// Stack: the tile of x twice (as rows and transposed), 124 KiB.
constexpr int64_t kAmxChunk = 2048;
constexpr int64_t kAmxB = 15;            // rows of x per B tile; its 16th column is ones
constexpr int64_t kAmxRows = 2 * kAmxB;  // rows of x per tile
constexpr int64_t kAmxMinRows = 8;       // fewer: the VNNI loops
constexpr int64_t kAmxSteps = kAmxChunk / kVnniStep;

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
  // The next group's rows from this chunk's first column on (up to the weight's end).
  const RowsAhead next = RowsAheadOf(w, r + count, std::min<int64_t>(32, w.rows - (r + count)), c0);
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
    // 32 rows side by side, 32 bytes of each per step.
    PrefetchShare(next.p, next.bytes, s, steps);
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
__attribute__((target(TERN_VNNI_TARGET))) void AmxTransposeX(const int8_t (*xq)[kAmxChunk],
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

}  // namespace

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

__attribute__((target(TERN_AMX_TARGET))) void AmxLoops(const float* x, int64_t m, int64_t ldx,
                                                       const WeightView& w, const float* bias,
                                                       float* y, int64_t ldy) {
  if (VnniOneRow(x, m, w, bias, y)) return;  // no tiles (nor their configuration) for one row
  alignas(64) int8_t xq[kAmxRows][kAmxChunk];
  alignas(64) int8_t xb[kAmxSteps][2][16][64];  // per step: the x tiles as the tile unit's B
  int32_t qsum[kAmxRows], zp[kAmxRows];
  static const AmxConfig config;
  _tile_loadconfig(&config);
  Tiles<kAmxRows, kAmxChunk>(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        qsum[t] = QuantizeVnni(xt, p, count, xq[t]);
        zp[t] = p.zero_point;
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        if (tile < kAmxMinRows) {
          return VnniChunk(w, c0, c1, &xq[0][0], kAmxChunk, qsum, zp, tile, yt, ldy);
        }
        const int64_t xtiles = tile > kAmxB ? 2 : 1;
        const int64_t xrows_last = tile - kAmxB * (xtiles - 1);
        AmxTransposeX(xq, tile, xtiles, (c1 - c0) / kVnniStep, xb);
        if (xtiles > 1) return AmxChunk<2>(w, c0, c1, xb, xrows_last, qsum, zp, yt, ldy);
        AmxChunk<1>(w, c0, c1, xb, xrows_last, qsum, zp, yt, ldy);
      },
      VnniRowsOps());
  _tile_release();
}

}  // namespace tern::vec::qd8_loops
#endif
