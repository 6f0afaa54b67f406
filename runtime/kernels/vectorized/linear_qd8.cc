#include "runtime/kernels/vectorized/linear_qd8.h"

#include <algorithm>

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

// The int32 lanes of one block (steps of 16 columns), from its first column in xt and wq.
__attribute__((target("avx2"), always_inline)) inline __m256i BlockSum(const int16_t* xt,
                                                                       const int16_t* wq,
                                                                       int64_t steps) {
  __m256i sum = _mm256_setzero_si256();
  for (int64_t s = 0; s < steps; ++s) {
    const __m256i xv = _mm256_load_si256(reinterpret_cast<const __m256i*>(xt + s * kAvx2Step));
    const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(wq + s * kAvx2Step));
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(xv, wv));
  }
  return sum;
}

// Each row of the tile's sums over columns [c0, c1), added to (c0 == 0: stored in) y. kSteps > 0:
// the chunk holds whole blocks of kSteps steps each (blocks of 32, 64, 128 ... dividing it), two
// float accumulators over alternate blocks; 0: any blocks, one accumulator.
template <int kSteps>
__attribute__((target("avx2,fma"))) void Avx2Chunk(const WeightView& w, int64_t c0, int64_t c1,
                                                   const int16_t (*xq)[kChunk], int64_t tile,
                                                   int16_t* wq, float* y, int64_t ldy) {
  const int64_t block = BlockOf(w), blocks = w.groups_per_row();
  const int64_t first = c0 / block;  // the chunk's first block
  const int64_t whole = (c1 - c0) / block;
  for (int64_t r = 0; r < w.rows; ++r) {
    UnpackSplit(w, r, c0, c1, wq);
    const float* scales = w.scales + r * blocks + first;
    int64_t t = 0;
    if (kSteps > 0) {
      // Two rows at a time share each block's weight loads and scale; every row still adds up
      // its own blocks in the order a row alone does.
      constexpr int64_t kBlock = kSteps * kAvx2Step;
      for (; t + 2 <= tile; t += 2) {
        const int16_t* x0 = xq[t];
        const int16_t* x1 = xq[t + 1];
        __m256 acc0 = _mm256_setzero_ps(), odd0 = _mm256_setzero_ps();
        __m256 acc1 = _mm256_setzero_ps(), odd1 = _mm256_setzero_ps();
        int64_t g = 0;
        for (; g + 2 <= whole; g += 2) {
          const __m256 s0 = _mm256_set1_ps(scales[g]), s1 = _mm256_set1_ps(scales[g + 1]);
          const int16_t* w0 = wq + g * kBlock;
          const int16_t* w1 = w0 + kBlock;
          acc0 =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x0 + g * kBlock, w0, kSteps)), s0, acc0);
          acc1 =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x1 + g * kBlock, w0, kSteps)), s0, acc1);
          odd0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x0 + (g + 1) * kBlock, w1, kSteps)),
                                 s1, odd0);
          odd1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x1 + (g + 1) * kBlock, w1, kSteps)),
                                 s1, odd1);
        }
        if (g < whole) {
          const __m256 s0 = _mm256_set1_ps(scales[g]);
          const int16_t* w0 = wq + g * kBlock;
          acc0 =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x0 + g * kBlock, w0, kSteps)), s0, acc0);
          acc1 =
              _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockSum(x1 + g * kBlock, w0, kSteps)), s0, acc1);
        }
        const float p0 = HorizontalSum(_mm256_add_ps(acc0, odd0));
        const float p1 = HorizontalSum(_mm256_add_ps(acc1, odd1));
        float* out0 = y + t * ldy + r;
        float* out1 = out0 + ldy;
        *out0 = c0 == 0 ? p0 : *out0 + p0;
        *out1 = c0 == 0 ? p1 : *out1 + p1;
      }
    }
    for (; t < tile; ++t) {
      const int16_t* xt = xq[t];
      __m256 acc = _mm256_setzero_ps();
      if (kSteps > 0) {
        constexpr int64_t kBlock = kSteps * kAvx2Step;
        __m256 odd = _mm256_setzero_ps();
        int64_t g = 0;
        for (; g + 2 <= whole; g += 2) {
          const __m256i a = BlockSum(xt + g * kBlock, wq + g * kBlock, kSteps);
          const __m256i b = BlockSum(xt + (g + 1) * kBlock, wq + (g + 1) * kBlock, kSteps);
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(scales[g]), acc);
          odd = _mm256_fmadd_ps(_mm256_cvtepi32_ps(b), _mm256_set1_ps(scales[g + 1]), odd);
        }
        if (g < whole) {
          const __m256i a = BlockSum(xt + g * kBlock, wq + g * kBlock, kSteps);
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), _mm256_set1_ps(scales[g]), acc);
        }
        acc = _mm256_add_ps(acc, odd);
      } else {
        for (int64_t b0 = c0, g = first; b0 < c1; ++g) {
          const int64_t b1 = std::min(c1, (g + 1) * block);
          const __m256i sum = BlockSum(xt + (b0 - c0), wq + (b0 - c0), (b1 - b0) / kAvx2Step);
          acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(scales[g - first]), acc);
          b0 = b1;
        }
      }
      float* out = y + t * ldy + r;
      const float partial = HorizontalSum(acc);
      *out = c0 == 0 ? partial : *out + partial;
    }
  }
}

// Avx2Chunk for this chunk's blocks.
void Avx2AnyChunk(const WeightView& w, int64_t c0, int64_t c1, const int16_t (*xq)[kChunk],
                  int64_t tile, int16_t* wq, float* y, int64_t ldy) {
  const int64_t block = BlockOf(w);
  if (c0 % block == 0 && (c1 - c0) % block == 0) {  // whole blocks
    switch (block) {
      case 32:
        return Avx2Chunk<2>(w, c0, c1, xq, tile, wq, y, ldy);
      case 64:
        return Avx2Chunk<4>(w, c0, c1, xq, tile, wq, y, ldy);
      case 128:
        return Avx2Chunk<8>(w, c0, c1, xq, tile, wq, y, ldy);
      default:
        break;
    }
  }
  Avx2Chunk<0>(w, c0, c1, xq, tile, wq, y, ldy);
}

void Avx2Loops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
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
        Avx2AnyChunk(w, c0, c1, xq, tile, wq, yt, ldy);
      });
}

bool CpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

}  // namespace

bool LinearQd8Takes(const WeightView& w) { return w.dtype == DType::kI8 || w.dtype == DType::kI4; }

bool LinearQd8Avx2(const WeightView& w) {
#if defined(__x86_64__)
  // Whole steps of 16 columns (int8) or of 32 (int4: 16 bytes split into even and odd) in every
  // block and chunk.
  const int64_t step = w.dtype == DType::kI4 ? 32 : kAvx2Step;
  return LinearQd8Takes(w) && CpuHasAvx2() && w.cols % step == 0 && BlockOf(w) % step == 0;
#else
  (void)w;
  return false;
#endif
}

void LinearQd8(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy) {
#if defined(__x86_64__)
  if (LinearQd8Avx2(w)) {
    Avx2Loops(x, m, ldx, w, bias, y, ldy);
    return;
  }
#endif
  PortableLoops(x, m, ldx, w, bias, y, ldy);
}

void LinearQd8Portable(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                       const float* bias, float* y, int64_t ldy) {
  PortableLoops(x, m, ldx, w, bias, y, ldy);
}

}  // namespace tern::vec
