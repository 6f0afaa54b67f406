// What both AMX loops of vec::LinearQd8 share (linear_qd8_amx.cc: tiles of x on the stack;
// linear_qd8_amx_rows.cc: rows of x quantized once into a caller's scratch): the tile
// configuration, the tile instructions, and the 16 x 16 transpose of 4-byte groups that turns
// rows into the tile unit's B layout. x86-64 only; internal.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "runtime/kernels/vectorized/linear_qd8_vnni.h"

#define TERN_AMX_TARGET TERN_VNNI_TARGET ",amx-tile,amx-int8"

namespace tern::vec::qd8_loops {

// The tile configuration: palette 1, tiles 0-7 all 16 rows of 64 bytes (0-3: sums; 4-7: the
// operands).
struct alignas(64) AmxConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// The tile instructions, with the memory they read or write made known to the compiler
// (GCC 12's _tile_loadd / tdpbusd macros declare none, so it could move the buffers' stores past
// them). TERN_TILE_LOAD_ROWS: 16 rows `stride` bytes apart.
#define TERN_TILE_LOAD(t, base) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(int64_t{64}) : "memory")
#define TERN_TILE_LOAD_ROWS(t, base, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(base), "r"(int64_t{stride}) : "memory")
#define TERN_TILE_STORE(t, base) \
  asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(base), "r"(int64_t{64}) : "memory")
#define TERN_TILE_ZERO(t) asm volatile("tilezero %%tmm" #t ::)
// c += a (unsigned bytes) . b (signed bytes); DPBSSD: both signed.
#define TERN_TILE_DPBUSD(c, a, b) asm volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TERN_TILE_DPBSSD(c, a, b) asm volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

// The 16 x 16 matrix of 4-byte groups in[i] (row i), transposed: out[j] holds group j of every
// row (lane i: in[i]'s). Unpacks of 32 and 64 bits within 128-bit lanes, then two shuffles of
// lanes.
__attribute__((target(TERN_VNNI_TARGET))) inline void Transpose16(const __m512i* in, __m512i* out) {
  __m512i a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_maskz_unpacklo_epi32(0xFFFF, in[i], in[i + 1]);
    a[i + 1] = _mm512_maskz_unpackhi_epi32(0xFFFF, in[i], in[i + 1]);
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

// The same for 16 rows of 64 bytes in memory.
__attribute__((target(TERN_VNNI_TARGET))) inline void Transpose16(const void* const* rows,
                                                                  __m512i* out) {
  __m512i in[16];
  for (int i = 0; i < 16; ++i) in[i] = _mm512_loadu_si512(rows[i]);
  Transpose16(in, out);
}

}  // namespace tern::vec::qd8_loops
#endif
