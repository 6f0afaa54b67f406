#include "runtime/kernels/vectorized/linear_qd8_vnni.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>

namespace tern::vec::qd8_loops {

namespace {

// AVX-512 VNNI's vpdpbusd for int4 with one scale per row: 64 products of unsigned by signed
// bytes per instruction, added into 16 int32 lanes (exact), where vpmaddwd above takes 32
// 16-bit ones and an add. The weight bytes stay in the file's layout (not repacked): 32 bytes
// of a row, broadcast to both halves of a register, masked to their low nibbles (the even
// columns) in the lower half and to their high nibbles in the upper (the odd columns, times 16:
// no shift), with the nibble's top bit flipped, which makes it w + 8 in 0..15 (times 16 above).
// x is quantized to int8 q (not q - zero point, which needs 9 bits) in the same order: 32 even
// columns, then 32 odd. The upper lanes' sums are multiples of 16 and divided exactly; then
//   sum (q - zp) w = [sum (w + 8) q - 8 sum q] - zp [sum (w + 8) - 8 k].
// Four rows of x times four weight rows at a time (16 accumulators in registers), their sums
// reduced four at a time and corrected, added and scaled as vectors.

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

// How far ahead (in weight rows, a multiple of the blocks' four) a block of 2-4 rows of x that
// reads its weights once (beam 4's step) prefetches. Measured on this AMX VM with one row of x,
// before OneRowBlock took that case (`tern bench --linear --rows 1`, weights from memory): for
// rows under 1 KiB (the paper-base model's 512 columns) about 2 KiB on streamed 11.7-14.1 GB/s
// against 9.3-10.6 at 16 rows (4 KiB) on, though whole decode steps moved within noise (beam 4:
// 1.00-1.05x). Rows of 1 KiB and more (LLaMA 3.2 1B's 2048 and 8192 columns) keep 16 rows on
// (16-64 KiB): alone their layers also streamed faster at 4 rows on, but the whole decode step
// was 2-5% slower. No prefetch: 8.2-10.1 GB/s.
constexpr int64_t kAheadBytes = 2048;
constexpr int64_t kAheadRowsLong = 16;
inline int64_t RowsAheadForOneRead(const WeightView& w) {
  const int64_t bytes = static_cast<int64_t>(w.row_bytes());
  if (bytes >= 1024) return kAheadRowsLong;
  return std::max<int64_t>(4, (kAheadBytes / std::max<int64_t>(1, bytes) + 3) / 4 * 4);
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
                                                         const int8_t* xq, int64_t ldxq,
                                                         const int32_t* qsum, const int32_t* zp,
                                                         int64_t t, float* y, int64_t ldy,
                                                         int64_t ahead) {
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
  // kSums (a tile of at most four rows: these weights are read once): the four rows `ahead` on
  // (RowsAheadForOneRead) prefetched, a share per step, as the AMX loops do (four rows side by
  // side, 32 bytes of each per step).
  const RowsAhead next =
      RowsAheadOf(w, r + ahead, kSums ? std::min<int64_t>(kR, w.rows - (r + ahead)) : 0, c0);
  for (int64_t s = 0; s < steps; ++s) {
    PrefetchShare(next.p, next.bytes, s, steps);
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
#define TERN_VNNI_ROW(i)                                                       \
  if constexpr (kT > i) {                                                      \
    const __m512i xv = _mm512_load_si512(xq + (t + i) * ldxq + s * kVnniStep); \
    Dpbusd(a##i##0, w0, xv);                                                   \
    if constexpr (kR > 1) Dpbusd(a##i##1, w1, xv);                             \
    if constexpr (kR > 2) Dpbusd(a##i##2, w2, xv);                             \
    if constexpr (kR > 3) Dpbusd(a##i##3, w3, xv);                             \
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

// One row of x: how far ahead of the byte it reads a weight row's loop prefetches (into L2;
// OneRowBlock). Measured with bench/tools/int4_row_order.cc, a harness of these loops streaming
// 768 MiB of int4 layers on the AMX VM (LLaMA 3.2 1B's, the paper-base model's and SmolLM's
// shapes): 16-20 GB/s at 4-16 KiB on into L2, 13-16 with no prefetch, and the four rows side by
// side of VnniBlock (the order before) 10-14 with its prefetch, 12-17 without. For the paper-base
// model's short rows (256 bytes) 2 KiB on into L1 instead gave its decode step 1.19 ms against
// 16 KiB's 1.22 and the loops before's 1.18 (arms.py, 7 rounds): within the runs' noise.
constexpr int64_t kOneRowAheadBytes = 16384;

// Weight row `row`'s sums with one row of x (xq) over `steps` steps: the dot products as
// vpdpbusd gives them (acc) and the sums of the nibbles (sad, vpsadbw's int64 lanes), in two
// accumulators each so that no step waits for the one before; prefetching `ahead` bytes on while
// that stays before `end`.
__attribute__((target(TERN_VNNI_TARGET), always_inline)) inline void OneRowSums(
    const uint8_t* row, int64_t steps, const int8_t* xq, const uint8_t* end, __m512i mask,
    __m512i flip, __m512i* acc, __m512i* sad) {
  const __m512i z = _mm512_setzero_si512();
  __m512i a0 = z, a1 = z, s0 = z, s1 = z;
  int64_t s = 0;
  for (; s + 2 <= steps; s += 2) {
    const uint8_t* p = row + s * 32;
    if (end - p > kOneRowAheadBytes) _mm_prefetch(p + kOneRowAheadBytes, _MM_HINT_T2);
    const __m512i w0 = Nibbles(p, mask, flip), w1 = Nibbles(p + 32, mask, flip);
    s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
    s1 = _mm512_add_epi64(s1, _mm512_sad_epu8(w1, z));
    Dpbusd(a0, w0, _mm512_load_si512(xq + s * kVnniStep));
    Dpbusd(a1, w1, _mm512_load_si512(xq + (s + 1) * kVnniStep));
  }
  if (s < steps) {
    const __m512i w0 = Nibbles(row + s * 32, mask, flip);
    s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
    Dpbusd(a0, w0, _mm512_load_si512(xq + s * kVnniStep));
  }
  *acc = _mm512_add_epi32(a0, a1);  // exact: integer sums, in any order
  *sad = _mm512_add_epi64(s0, s1);
}

// Weight rows [r, r + kR) times one row of x over [c0, c1), as VnniBlock<1, kR, true> computes
// them (the same int32 sums), but each weight row read front to back before the next: rows are
// contiguous, so the layer's bytes are one sequential stream, which the hardware prefetchers
// follow, where four rows read side by side (32 bytes of each per step) are four short streams
// that they do not (OneRowSums' prefetch covers the rest).
template <int kR>
__attribute__((target(TERN_VNNI_TARGET))) void OneRowBlock(const WeightView& w, int64_t r,
                                                           int64_t c0, int64_t c1, const int8_t* xq,
                                                           int32_t qsum, int32_t zp, float* y) {
  const __m512i mask =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x0F), _mm256_set1_epi8(-16), 1);
  const __m512i flip =
      _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x08), _mm256_set1_epi8(-128), 1);
  const __m512i z = _mm512_setzero_si512();
  const int64_t steps = (c1 - c0) / kVnniStep;
  const uint8_t* end = w.row(w.rows);
  __m512i a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
  OneRowSums(w.row(r) + c0 / 2, steps, xq, end, mask, flip, &a0, &s0);
  if constexpr (kR > 1) OneRowSums(w.row(r + 1) + c0 / 2, steps, xq, end, mask, flip, &a1, &s1);
  if constexpr (kR > 2) OneRowSums(w.row(r + 2) + c0 / 2, steps, xq, end, mask, flip, &a2, &s2);
  if constexpr (kR > 3) OneRowSums(w.row(r + 3) + c0 / 2, steps, xq, end, mask, flip, &a3, &s3);
  const __m128i wsums =
      _mm_sub_epi32(Reduce4Sad(s0, s1, s2, s3), _mm_set1_epi32(8 * static_cast<int32_t>(c1 - c0)));
  __m128i v = _mm_sub_epi32(_mm_sub_epi32(Reduce4(a0, a1, a2, a3), _mm_set1_epi32(8 * qsum)),
                            _mm_mullo_epi32(_mm_set1_epi32(zp), wsums));
  constexpr __mmask8 kOut = (1u << kR) - 1;
  float* out = y + r;
  if (c0 != 0) v = _mm_add_epi32(v, _mm_maskz_loadu_epi32(kOut, out));  // the earlier chunks'
  _mm_mask_storeu_epi32(out, kOut, v);
}

// Weight rows [r, r + kR) times every row of the tile, four rows of x at a time (the weight rows'
// bytes read from memory once, then from the cache).
template <int kR>
void VnniWeightRows(const WeightView& w, int64_t r, int64_t c0, int64_t c1, const int8_t* xq,
                    int64_t ldxq, const int32_t* qsum, const int32_t* zp, int64_t tile, float* y,
                    int64_t ldy, int64_t ahead) {
  const __m128i none = _mm_setzero_si128();
  switch (tile) {  // one group of x rows: the weights' sums in its loop
    case 4:
      return VnniBlock<4, kR, true>(w, r, c0, c1, none, xq, ldxq, qsum, zp, 0, y, ldy, ahead);
    case 3:
      return VnniBlock<3, kR, true>(w, r, c0, c1, none, xq, ldxq, qsum, zp, 0, y, ldy, ahead);
    case 2:
      return VnniBlock<2, kR, true>(w, r, c0, c1, none, xq, ldxq, qsum, zp, 0, y, ldy, ahead);
    case 1:
      return OneRowBlock<kR>(w, r, c0, c1, xq, qsum[0], zp[0], y);
    default:
      break;
  }
  const __m128i wsums = VnniWeightSums<kR>(w, r, c0, c1);
  int64_t t = 0;
  for (; t + 4 <= tile; t += 4) {
    VnniBlock<4, kR, false>(w, r, c0, c1, wsums, xq, ldxq, qsum, zp, t, y, ldy, 0);
  }
  switch (tile - t) {
    case 3:
      return VnniBlock<3, kR, false>(w, r, c0, c1, wsums, xq, ldxq, qsum, zp, t, y, ldy, 0);
    case 2:
      return VnniBlock<2, kR, false>(w, r, c0, c1, wsums, xq, ldxq, qsum, zp, t, y, ldy, 0);
    case 1:
      return VnniBlock<1, kR, false>(w, r, c0, c1, wsums, xq, ldxq, qsum, zp, t, y, ldy, 0);
    default:
      return;
  }
}

}  // namespace

// The tile's sums over [c0, c1) for weight rows [r, rows), four weight rows at a time.
void VnniChunk(const WeightView& w, int64_t c0, int64_t c1, const int8_t* xq, int64_t ldxq,
               const int32_t* qsum, const int32_t* zp, int64_t tile, float* y, int64_t ldy,
               int64_t r) {
  const int64_t ahead = RowsAheadForOneRead(w);  // once per chunk, not per block
  for (; r + 4 <= w.rows; r += 4)
    VnniWeightRows<4>(w, r, c0, c1, xq, ldxq, qsum, zp, tile, y, ldy, ahead);
  switch (w.rows - r) {
    case 3:
      return VnniWeightRows<3>(w, r, c0, c1, xq, ldxq, qsum, zp, tile, y, ldy, ahead);
    case 2:
      return VnniWeightRows<2>(w, r, c0, c1, xq, ldxq, qsum, zp, tile, y, ldy, ahead);
    case 1:
      return VnniWeightRows<1>(w, r, c0, c1, xq, ldxq, qsum, zp, tile, y, ldy, ahead);
    default:
      return;
  }
}

__attribute__((target(TERN_VNNI_TARGET))) Qd8Row VnniRowsOps::params(const float* x,
                                                                     int64_t k) const {
  // Lane-wise x < lo ? x : lo is vminps(x, lo) (lo when x is NaN or both are zeros); the lanes
  // hold 0 or values below it (above, for hi), so the order they are combined in is exact.
  // Four of each, so that the loop is not one chain of minimums (4 cycles each): the rows are
  // whole steps of 64 columns.
  __m512 lo[4], hi[4];
  for (int h = 0; h < 4; ++h) lo[h] = hi[h] = _mm512_setzero_ps();
  for (int64_t c = 0; c < k; c += 64) {
    for (int h = 0; h < 4; ++h) {
      const __m512 v = _mm512_loadu_ps(x + c + 16 * h);
      lo[h] = _mm512_maskz_min_ps(0xFFFF, v, lo[h]);
      hi[h] = _mm512_maskz_max_ps(0xFFFF, v, hi[h]);
    }
  }
  for (int h = 1; h < 4; ++h) {
    lo[0] = _mm512_maskz_min_ps(0xFFFF, lo[h], lo[0]);
    hi[0] = _mm512_maskz_max_ps(0xFFFF, hi[h], hi[0]);
  }
  alignas(64) float lanes_lo[16], lanes_hi[16];
  _mm512_store_ps(lanes_lo, lo[0]);
  _mm512_store_ps(lanes_hi, hi[0]);
  float l = 0.0f, h = 0.0f;
  for (int i = 0; i < 16; ++i) {
    l = lanes_lo[i] < l ? lanes_lo[i] : l;
    h = lanes_hi[i] > h ? lanes_hi[i] : h;
  }
  return Qd8ParamsOfRange(l, h);
}
__attribute__((target(TERN_VNNI_TARGET))) void VnniRowsOps::epilogue(const WeightView& w, float* yi,
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

bool VnniOneRow(const float* x, int64_t m, const WeightView& w, const float* bias, float* y) {
  if (m != 1 || w.cols < 1 || w.cols > kTile * kChunk) return false;
  alignas(64) int8_t xq[kTile * kChunk];
  const VnniRowsOps ops;
  const Qd8Row p = ops.params(x, w.cols);
  const int32_t qsum = QuantizeVnni(x, p, w.cols, xq);
  const int32_t zp = p.zero_point;
  VnniChunk(w, 0, w.cols, xq, w.cols, &qsum, &zp, 1, y, w.rows);
  ops.epilogue(w, y, p.inv_scale, bias);
  return true;
}

void VnniLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
  if (VnniOneRow(x, m, w, bias, y)) return;
  alignas(64) int8_t xq[kTile][kChunk];
  int32_t qsum[kTile], zp[kTile];
  Tiles(
      x, m, ldx, w, bias, y, ldy,
      [&](int64_t t, const float* xt, Qd8Row p, int64_t count) {
        qsum[t] = QuantizeVnni(xt, p, count, xq[t]);
        zp[t] = p.zero_point;
      },
      [&](int64_t c0, int64_t c1, int64_t tile, float* yt) {
        VnniChunk(w, c0, c1, &xq[0][0], kChunk, qsum, zp, tile, yt, ldy);
      },
      VnniRowsOps());
}

}  // namespace tern::vec::qd8_loops
#endif
