#include "runtime/kernels/vectorized/linear_sign.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/kernels/vectorized/qd8.h"

namespace tern::vec {

namespace {

constexpr int64_t kGroupBytes = kSignPanelRows * 4;  // a group: 16 rows x 4 columns (int8)
constexpr int64_t kGroupBytes4 = kGroupBytes / 2;    // int4: the same as nibbles
// Bytes of each of x's two quantized copies (|q| and q) per block of rows, on the stack: 56 rows
// of the paper-base model's 512 columns, 14 of 2048 (both then cut to whole tiles, below). Each
// block reads the whole weight once, so the encoder's 512 rows read it about 10 times, from the
// last level cache. 28 KiB, not 32: SignPanelsLinear's frame (about 60 KiB) then leaves room
// under the 64 KiB of stack that `perf record --call-graph dwarf` copies per sample for the
// frames of its callers, so bench/profile.py can unwind them (with 32 KiB it lost every sample
// of these loops). Blocks of 8 to 32 KiB took the same time (session 35).
constexpr int64_t kBlockBytes = 28672;
constexpr int64_t kMaxBlockRows = 256;

// Where the rows' sums start after the panels (64-byte aligned).
size_t SumsOffset(const WeightView& w) {
  return (static_cast<size_t>(w.rows) * w.row_bytes() + 63) / 64 * 64;
}
constexpr int64_t kQuantizeStep = 256;  // columns QuantizeQd8 writes at a time
constexpr int64_t kAheadBytes = 16384;  // how far ahead a panel's first pass prefetches
// Rows of x per tile: 4 x 16 outputs keep 8 accumulators. With the intrinsics GCC 12 kept three
// of them on the stack (a load and a store each per group), so the 4-row tile's loop is written
// in assembly (SignSums4); tiles of 1 to 3 rows stay intrinsics. Against 3-row tiles each group
// is loaded once per 4 rows instead of 3: on the AMD EPYC (Zen 3) the base model's int8 beam 4
// took 1.14x less time, batch 16 1.07x (bench/ab.py, session 36).
constexpr int64_t kTileRows = 4;
// int4: 4 rows x 16 outputs, int16 accumulators for both halves (8), the unpacked halves, the
// nibble mask, the ones and a broadcast: 13 registers (the int32 sums stay in memory).
constexpr int64_t kTileRows4 = 4;
// int4 groups summed in int16 before widening: a pair of products is at most 2 x 15 x 128 =
// 3840, so 8 of them stay under 32767.
constexpr int64_t kInt16Groups = 8;

}  // namespace

bool SignPanelsBeatXnnpack(const WeightView& w) {
#if defined(__x86_64__)
  static const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          !__builtin_cpu_supports("avx512f") && !__builtin_cpu_supports("avxvnni");
  return cpu && (w.dtype == DType::kI8 || w.dtype == DType::kI4) && w.group_size == 0 &&
         w.layout == WeightLayout::kRows && w.scales != nullptr && w.rows > 0 &&
         w.rows % kSignPanelRows == 0 && w.cols > 0 && w.cols % 4 == 0 && w.cols <= kSignMaxCols;
#else
  (void)w;
  return false;
#endif
}

bool SignPanelsExact(const WeightView& w) {
  if (w.dtype == DType::kI4) return true;  // w + 8 in 0..15 needs no sign
  return std::memchr(w.data, 0x80, w.row_bytes() * static_cast<size_t>(w.rows)) == nullptr;
}

size_t SignPanelsBytes(const WeightView& w) {
  return SumsOffset(w) + static_cast<size_t>(w.rows) * sizeof(int32_t);
}

void PackSignPanels(const WeightView& w, void* out) {
  const int64_t k = w.cols, groups = k / 4;
  const int64_t row_bytes = static_cast<int64_t>(w.row_bytes());
  const auto* src = static_cast<const uint8_t*>(w.data);
  auto* dst = static_cast<uint8_t*>(out);
  auto* sums = reinterpret_cast<int32_t*>(dst + SumsOffset(w));
  if (w.dtype == DType::kI4) {
    // Group g of a panel: 32 bytes, byte 4j + c holding row j's column 4g + c in its low nibble
    // and row j + 8's in its high one, each as w + 8 (the nibble with its top bit flipped).
    for (int64_t p = 0; p < w.rows / kSignPanelRows; ++p) {
      const uint8_t* panel = src + p * kSignPanelRows * row_bytes;
      uint8_t* o = dst + p * kSignPanelRows * row_bytes;
      for (int64_t g = 0; g < groups; ++g) {
        for (int64_t j = 0; j < 8; ++j) {
          for (int64_t c = 0; c < 4; ++c) {
            const int64_t col = 4 * g + c;
            const int lo = Int4At(panel + j * row_bytes, col) + 8;
            const int hi = Int4At(panel + (j + 8) * row_bytes, col) + 8;
            o[g * kGroupBytes4 + 4 * j + c] = static_cast<uint8_t>(lo | (hi << 4));
          }
        }
      }
    }
    for (int64_t r = 0; r < w.rows; ++r) {
      int32_t sum = 0;
      for (int64_t c = 0; c < k; ++c) sum += Int4At(src + r * row_bytes, c);
      sums[r] = sum;
    }
    return;
  }
  for (int64_t p = 0; p < w.rows / kSignPanelRows; ++p) {
    const uint8_t* panel = src + p * kSignPanelRows * k;
    uint8_t* o = dst + p * kSignPanelRows * k;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t j = 0; j < kSignPanelRows; ++j) {
        std::memcpy(o + g * kGroupBytes + j * 4, panel + j * k + g * 4, 4);
      }
    }
  }
  for (int64_t r = 0; r < w.rows; ++r) {
    const auto* row = reinterpret_cast<const int8_t*>(src + r * k);
    int32_t sum = 0;
    for (int64_t c = 0; c < k; ++c) sum += row[c];
    sums[r] = sum;
  }
}

WeightView SignPanelsView(const WeightView& w, const void* packed) {
  WeightView v = w;
  v.data = packed;
  v.layout = WeightLayout::kSignPanels;
  v.row_sums =
      reinterpret_cast<const int32_t*>(static_cast<const uint8_t*>(packed) + SumsOffset(w));
  return v;
}

#if defined(__x86_64__)
namespace {

// The rows of a block of x, quantized as QuantizeQd8 quantizes them: |q| (the unsigned side of
// vpmaddubsw) and q (whose signs the weights take), row t at t * k.
struct Block {
  int64_t rows = 0, k = 0;
  const uint8_t* abs_q = nullptr;
  const int8_t* q = nullptr;
  const int32_t* zero_point = nullptr;
  const float* inv_scale = nullptr;
  const int32_t* q_sum = nullptr;  // each row's sum of q (int4's term for w + 8)
};

// What a tile writes its outputs with: the panel's row scales, bias and sums of w, and whether
// the epilogue fuses the bias in (Qd8Output, Qd8EpilogueFused).
struct Epilogue {
  const float* scales;
  const float* bias;  // or null
  const int32_t* sums;
  bool fused;
};

// One row of x against the group's two halves b0, b1 (rows 0-7 and 8-15 of the panel).
#define TERN_SIGN_ROW(i)                                                                     \
  if constexpr (kRows > i) {                                                                 \
    int32_t a4, q4;                                                                          \
    std::memcpy(&a4, abs_q + i * k + 4 * g, 4);                                              \
    std::memcpy(&q4, q + i * k + 4 * g, 4);                                                  \
    const __m256i a = _mm256_set1_epi32(a4), s = _mm256_set1_epi32(q4);                      \
    c##i##0 = _mm256_add_epi32(                                                              \
        c##i##0, _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(b0, s)), ones)); \
    c##i##1 = _mm256_add_epi32(                                                              \
        c##i##1, _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(b1, s)), ones)); \
  }

// Row i's 16 outputs from its sums with the panel (c0: rows 0-7, c1: 8-15), as Qd8Output.
#define TERN_SIGN_OUT(i)                                                                   \
  if constexpr (kRows > i) {                                                               \
    const __m256i zp = _mm256_set1_epi32(x.zero_point[t + i]);                             \
    const __m256 inv = _mm256_set1_ps(x.inv_scale[t + i]);                                 \
    const __m256 f0 = _mm256_mul_ps(                                                       \
        _mm256_cvtepi32_ps(_mm256_sub_epi32(c##i##0, _mm256_mullo_epi32(zp, sum0))), inv); \
    const __m256 f1 = _mm256_mul_ps(                                                       \
        _mm256_cvtepi32_ps(_mm256_sub_epi32(c##i##1, _mm256_mullo_epi32(zp, sum1))), inv); \
    float* out = y + i * ldy;                                                              \
    _mm256_storeu_ps(out, Scale(f0, e, 0));                                                \
    _mm256_storeu_ps(out + 8, Scale(f1, e, 8));                                            \
  }

// scaled times the row scales [j, j + 8) plus their bias: fused or not, as XNNPACK's epilogue.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 Scale(__m256 scaled,
                                                                       const Epilogue& e,
                                                                       int64_t j) {
  const __m256 s = _mm256_loadu_ps(e.scales + j);
  if (e.bias == nullptr) return _mm256_mul_ps(scaled, s);
  const __m256 b = _mm256_loadu_ps(e.bias + j);
  return e.fused ? _mm256_fmadd_ps(scaled, s, b) : _mm256_add_ps(_mm256_mul_ps(scaled, s), b);
}

// The sums of 4 rows of x (|q| at abs_q, q at q, row i at i * k) with `groups` groups of a panel:
// sums[16 i + j] for the panel's row j (int32, exact). The sign trick as TERN_SIGN_ROW, with its
// registers placed by hand: 4 rows take 8 accumulators, the group's two halves, the ones, the
// row's two broadcasts and two products, 15 of AVX2's 16 registers, and GCC 12 kept three of the
// accumulators on the stack (a load and a store each per group). 4 rows read each group once
// for 4 rows of x where 3 rows read it once for 3: on Zen 3 the 4-row loop of
// bench/tools/int8_sign_gemm.cc ran 1.2-1.4x the multiply-adds per second of its 3-row one in L1.
// The sums are added to what `sums` holds. kAhead: each group also prefetches the line
// kAheadBytes on (the caller limits the groups to those whose line is inside the weight).
template <bool kAhead>
__attribute__((target("avx2"))) void SignSums4(const uint8_t* abs_q, const int8_t* q, int64_t k,
                                               const int8_t* panel, int64_t groups, int32_t* sums) {
  if (groups <= 0) return;
  const int8_t* end = panel + groups * kGroupBytes;
  const uint8_t* abs_q2 = abs_q + 2 * k;  // rows 2 and 3
  const int8_t* q2 = q + 2 * k;
  static_assert(kAheadBytes == 16384, "the prefetch's displacement below");
  // Row i's step: broadcast 4 bytes of |q| and of q, sign both halves by q, multiply by |q|
  // (pairs into int16, exact: |q| <= 128, |w| <= 127), widen by the ones, add.
  // clang-format off
#define TERN_SIGN_ASM_ROW(a, s, c0, c1)          \
  "vpbroadcastd " a ", %%ymm11\n\t"              \
  "vpbroadcastd " s ", %%ymm12\n\t"              \
  "vpsignb %%ymm12, %%ymm8, %%ymm13\n\t"         \
  "vpsignb %%ymm12, %%ymm9, %%ymm14\n\t"         \
  "vpmaddubsw %%ymm13, %%ymm11, %%ymm13\n\t"     \
  "vpmaddubsw %%ymm14, %%ymm11, %%ymm14\n\t"     \
  "vpmaddwd %%ymm10, %%ymm13, %%ymm13\n\t"       \
  "vpmaddwd %%ymm10, %%ymm14, %%ymm14\n\t"       \
  "vpaddd %%ymm13, %%" c0 ", %%" c0 "\n\t"        \
  "vpaddd %%ymm14, %%" c1 ", %%" c1 "\n\t"
#define TERN_SIGN_ASM(prefetch)                                                        \
  "vmovdqu (%[sums]), %%ymm0\n\t"                                                      \
  "vmovdqu 32(%[sums]), %%ymm1\n\t"                                                    \
  "vmovdqu 64(%[sums]), %%ymm2\n\t"                                                    \
  "vmovdqu 96(%[sums]), %%ymm3\n\t"                                                    \
  "vmovdqu 128(%[sums]), %%ymm4\n\t"                                                   \
  "vmovdqu 160(%[sums]), %%ymm5\n\t"                                                   \
  "vmovdqu 192(%[sums]), %%ymm6\n\t"                                                   \
  "vmovdqu 224(%[sums]), %%ymm7\n\t"                                                   \
  "vpcmpeqw %%ymm10, %%ymm10, %%ymm10\n\t"                                             \
  "vpsrlw $15, %%ymm10, %%ymm10\n\t" /* int16 ones */                                  \
  "1:\n\t" prefetch                                                                   \
  "vmovdqu (%[w]), %%ymm8\n\t"                                                         \
  "vmovdqu 32(%[w]), %%ymm9\n\t"                                                       \
  TERN_SIGN_ASM_ROW("(%[a])", "(%[s])", "ymm0", "ymm1")                                \
  TERN_SIGN_ASM_ROW("(%[a], %[k], 1)", "(%[s], %[k], 1)", "ymm2", "ymm3")              \
  TERN_SIGN_ASM_ROW("(%[a2])", "(%[s2])", "ymm4", "ymm5")                              \
  TERN_SIGN_ASM_ROW("(%[a2], %[k], 1)", "(%[s2], %[k], 1)", "ymm6", "ymm7")            \
  "add $64, %[w]\n\t"                                                                  \
  "add $4, %[a]\n\t"                                                                   \
  "add $4, %[s]\n\t"                                                                   \
  "add $4, %[a2]\n\t"                                                                  \
  "add $4, %[s2]\n\t"                                                                  \
  "cmp %[end], %[w]\n\t"                                                               \
  "jne 1b\n\t"                                                                         \
  "vmovdqu %%ymm0, (%[sums])\n\t"                                                      \
  "vmovdqu %%ymm1, 32(%[sums])\n\t"                                                    \
  "vmovdqu %%ymm2, 64(%[sums])\n\t"                                                    \
  "vmovdqu %%ymm3, 96(%[sums])\n\t"                                                    \
  "vmovdqu %%ymm4, 128(%[sums])\n\t"                                                   \
  "vmovdqu %%ymm5, 160(%[sums])\n\t"                                                   \
  "vmovdqu %%ymm6, 192(%[sums])\n\t"                                                   \
  "vmovdqu %%ymm7, 224(%[sums])\n\t"                                                   \
  : [w] "+r"(panel), [a] "+r"(abs_q), [s] "+r"(q), [a2] "+r"(abs_q2), [s2] "+r"(q2)    \
  : [k] "r"(k), [end] "r"(end), [sums] "r"(sums)                                       \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",     \
    "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "memory", "cc"
  if constexpr (kAhead) {
    __asm__ volatile(TERN_SIGN_ASM("prefetcht0 16384(%[w])\n\t"));
  } else {
    __asm__ volatile(TERN_SIGN_ASM(""));
  }
  // clang-format on
#undef TERN_SIGN_ASM
#undef TERN_SIGN_ASM_ROW
}

// Rows [t, t + kRows) of the block times one panel (`groups` groups at `panel`): the exact sums
// of q w, less the zero point times the panel rows' sums of w (e.sums, from packing), scaled
// into y's 16 columns. kAhead (a block's first tile, which reads the panel from memory: a
// decode step's one row reads every weight once): the bytes kAheadBytes on are prefetched, a
// line per group, up to the weight's end. The accumulators are named variables: GCC 12 keeps an
// array of vectors on the stack, a store per step.
template <int kRows, bool kAhead>
__attribute__((target("avx2,fma"))) void SignTile(const Block& x, int64_t t, const int8_t* panel,
                                                  int64_t groups, const int8_t* end,
                                                  const Epilogue& e, float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i z = _mm256_setzero_si256();
  __m256i c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
  const int64_t k = x.k;
  const uint8_t* abs_q = x.abs_q + t * k;
  const int8_t* q = x.q + t * k;
  if constexpr (kRows == 4) {
    alignas(32) int32_t sums[64] = {};
    if constexpr (kAhead) {  // the groups whose line kAheadBytes on is inside the weight first
      const int64_t ahead_groups = std::max<int64_t>(
          0, std::min<int64_t>(groups, (end - (panel + kAheadBytes)) / kGroupBytes));
      SignSums4<true>(abs_q, q, k, panel, ahead_groups, sums);
      SignSums4<false>(abs_q + 4 * ahead_groups, q + 4 * ahead_groups, k,
                       panel + ahead_groups * kGroupBytes, groups - ahead_groups, sums);
    } else {
      SignSums4<false>(abs_q, q, k, panel, groups, sums);
    }
    c00 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums));
    c01 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 8));
    c10 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 16));
    c11 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 24));
    c20 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 32));
    c21 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 40));
    c30 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 48));
    c31 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums + 56));
    groups = 0;  // done: the loop below is for the other tiles
  }
  const int8_t* ahead = panel + kAheadBytes;
  const int64_t ahead_groups =
      kAhead ? std::max<int64_t>(0, std::min<int64_t>(groups, (end - ahead) / kGroupBytes)) : 0;
  for (int64_t g = 0; g < groups; ++g) {
    if (kAhead && g < ahead_groups) _mm_prefetch(ahead + g * kGroupBytes, _MM_HINT_T0);
    const __m256i b0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * kGroupBytes));
    const __m256i b1 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * kGroupBytes + 32));
    TERN_SIGN_ROW(0)
    TERN_SIGN_ROW(1)
    TERN_SIGN_ROW(2)
    TERN_SIGN_ROW(3)
  }
  const __m256i sum0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.sums));
  const __m256i sum1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.sums + 8));
  TERN_SIGN_OUT(0)
  TERN_SIGN_OUT(1)
  TERN_SIGN_OUT(2)
  TERN_SIGN_OUT(3)
}

#undef TERN_SIGN_ROW
#undef TERN_SIGN_OUT

// int4: one row of x against the group's unpacked halves lo, hi (w + 8 in 0..15, the unsigned
// side; q the signed one, no sign trick), summed in int16 (kInt16Groups groups at most).
#define TERN_INT4_ROW(i)                                              \
  if constexpr (kRows > i) {                                          \
    int32_t q4;                                                       \
    std::memcpy(&q4, q + i * k + 4 * g, 4);                           \
    const __m256i s = _mm256_set1_epi32(q4);                          \
    h##i##0 = _mm256_add_epi16(h##i##0, _mm256_maddubs_epi16(lo, s)); \
    h##i##1 = _mm256_add_epi16(h##i##1, _mm256_maddubs_epi16(hi, s)); \
  }
#define TERN_INT4_WIDEN(i)                                                               \
  if constexpr (kRows > i) {                                                             \
    acc[2 * i] = _mm256_add_epi32(acc[2 * i], _mm256_madd_epi16(h##i##0, ones));         \
    acc[2 * i + 1] = _mm256_add_epi32(acc[2 * i + 1], _mm256_madd_epi16(h##i##1, ones)); \
  }
// Row i's outputs: sum q (w + 8) - 8 sum q - zp sum w, scaled as Qd8Output.
#define TERN_INT4_OUT(i)                                                                           \
  if constexpr (kRows > i) {                                                                       \
    const __m256i zp = _mm256_set1_epi32(x.zero_point[t + i]);                                     \
    const __m256i eight_q = _mm256_set1_epi32(8 * x.q_sum[t + i]);                                 \
    const __m256 inv = _mm256_set1_ps(x.inv_scale[t + i]);                                         \
    const __m256i v0 =                                                                             \
        _mm256_sub_epi32(_mm256_sub_epi32(acc[2 * i], eight_q), _mm256_mullo_epi32(zp, sum0));     \
    const __m256i v1 =                                                                             \
        _mm256_sub_epi32(_mm256_sub_epi32(acc[2 * i + 1], eight_q), _mm256_mullo_epi32(zp, sum1)); \
    float* out = y + i * ldy;                                                                      \
    _mm256_storeu_ps(out, Scale(_mm256_mul_ps(_mm256_cvtepi32_ps(v0), inv), e, 0));                \
    _mm256_storeu_ps(out + 8, Scale(_mm256_mul_ps(_mm256_cvtepi32_ps(v1), inv), e, 8));            \
  }

// Int4Tile's sums for 4 rows of x (q at q, row i at i * k) with `groups` int4 groups of a
// panel, added to acc[2 i] (the panel's rows 0-7) and acc[2 i + 1] (8-15) as int32. As
// TERN_INT4_ROW, with the registers placed by hand: 8 int16 accumulators, the group, its two
// nibble halves, the mask, a broadcast, two products and the ones take all 16 of AVX2's, and
// GCC 12 kept an accumulator, the mask and a row pointer on the stack (SignSums4's reason).
// The int16 sums are widened into acc every kInt16Groups groups. kAhead: each group also
// prefetches the line kAheadBytes on.
template <bool kAhead>
__attribute__((target("avx2"))) void Int4Sums4(const int8_t* q, int64_t k, const int8_t* panel,
                                               int64_t groups, __m256i* acc) {
  if (groups <= 0) return;
  alignas(32) static const uint8_t kNibbles[32] = {0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F,
                                                   0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F,
                                                   0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F,
                                                   0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F, 0x0F};
  const int8_t* q2 = q + 2 * k;  // rows 2 and 3
  int64_t left = groups, run = 0;
  static_assert(kInt16Groups == 8 && kAheadBytes == 16384, "the constants in the loop below");
  // clang-format off
#define TERN_INT4_ASM_ROW(s, h0, h1)                 \
  "vpbroadcastd " s ", %%ymm12\n\t"                  \
  "vpmaddubsw %%ymm12, %%ymm9, %%ymm13\n\t"          \
  "vpmaddubsw %%ymm12, %%ymm10, %%ymm14\n\t"         \
  "vpaddw %%ymm13, %%" h0 ", %%" h0 "\n\t"            \
  "vpaddw %%ymm14, %%" h1 ", %%" h1 "\n\t"
#define TERN_INT4_ASM_WIDEN(h, at)                   \
  "vpmaddwd %%ymm15, %%" h ", %%" h "\n\t"           \
  "vpaddd " at "(%[acc]), %%" h ", %%" h "\n\t"       \
  "vmovdqu %%" h ", " at "(%[acc])\n\t"
#define TERN_INT4_ASM(prefetch)                                                        \
  "vmovdqa (%[nibbles]), %%ymm11\n\t"                                                  \
  "vpcmpeqw %%ymm15, %%ymm15, %%ymm15\n\t"                                             \
  "vpsrlw $15, %%ymm15, %%ymm15\n\t" /* int16 ones */                                  \
  "1:\n\t" /* a run of up to 8 groups, summed in int16 */                             \
  "mov $8, %[run]\n\t"                                                                 \
  "cmp %[run], %[left]\n\t"                                                            \
  "cmovl %[left], %[run]\n\t"                                                          \
  "sub %[run], %[left]\n\t"                                                            \
  "vpxor %%ymm0, %%ymm0, %%ymm0\n\t"                                                    \
  "vpxor %%ymm1, %%ymm1, %%ymm1\n\t"                                                    \
  "vpxor %%ymm2, %%ymm2, %%ymm2\n\t"                                                    \
  "vpxor %%ymm3, %%ymm3, %%ymm3\n\t"                                                    \
  "vpxor %%ymm4, %%ymm4, %%ymm4\n\t"                                                    \
  "vpxor %%ymm5, %%ymm5, %%ymm5\n\t"                                                    \
  "vpxor %%ymm6, %%ymm6, %%ymm6\n\t"                                                    \
  "vpxor %%ymm7, %%ymm7, %%ymm7\n\t"                                                    \
  "2:\n\t" prefetch                                                                   \
  "vmovdqu (%[w]), %%ymm8\n\t"                                                         \
  "vpand %%ymm11, %%ymm8, %%ymm9\n\t"                                                  \
  "vpsrlw $4, %%ymm8, %%ymm10\n\t"                                                     \
  "vpand %%ymm11, %%ymm10, %%ymm10\n\t"                                                \
  TERN_INT4_ASM_ROW("(%[s])", "ymm0", "ymm1")                                          \
  TERN_INT4_ASM_ROW("(%[s], %[k], 1)", "ymm2", "ymm3")                                 \
  TERN_INT4_ASM_ROW("(%[s2])", "ymm4", "ymm5")                                         \
  TERN_INT4_ASM_ROW("(%[s2], %[k], 1)", "ymm6", "ymm7")                                \
  "add $32, %[w]\n\t"                                                                  \
  "add $4, %[s]\n\t"                                                                   \
  "add $4, %[s2]\n\t"                                                                  \
  "dec %[run]\n\t"                                                                     \
  "jnz 2b\n\t"                                                                         \
  TERN_INT4_ASM_WIDEN("ymm0", "0") TERN_INT4_ASM_WIDEN("ymm1", "32")                   \
  TERN_INT4_ASM_WIDEN("ymm2", "64") TERN_INT4_ASM_WIDEN("ymm3", "96")                  \
  TERN_INT4_ASM_WIDEN("ymm4", "128") TERN_INT4_ASM_WIDEN("ymm5", "160")                \
  TERN_INT4_ASM_WIDEN("ymm6", "192") TERN_INT4_ASM_WIDEN("ymm7", "224")                \
  "test %[left], %[left]\n\t"                                                          \
  "jnz 1b\n\t"                                                                         \
  : [w] "+r"(panel), [s] "+r"(q), [s2] "+r"(q2), [left] "+r"(left), [run] "+r"(run)    \
  : [k] "r"(k), [acc] "r"(acc), [nibbles] "r"(kNibbles)                                \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",     \
    "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc"
  if constexpr (kAhead) {
    __asm__ volatile(TERN_INT4_ASM("prefetcht0 16384(%[w])\n\t"));
  } else {
    __asm__ volatile(TERN_INT4_ASM(""));
  }
  // clang-format on
#undef TERN_INT4_ASM
#undef TERN_INT4_ASM_WIDEN
#undef TERN_INT4_ASM_ROW
}

// SignTile for int4 panels (32 bytes a group): vpmaddubsw of w + 8 by q cannot saturate, so
// each half takes one vpmaddubsw and one int16 add per group, widened once per kInt16Groups
// groups, where int8's sign trick takes a vpsignb, a vpmaddubsw, a vpmaddwd and an add.
template <int kRows, bool kAhead>
__attribute__((target("avx2,fma"))) void Int4Tile(const Block& x, int64_t t, const int8_t* panel,
                                                  int64_t groups, const int8_t* end,
                                                  const Epilogue& e, float* y, int64_t ldy) {
  const __m256i ones = _mm256_set1_epi16(1), nibble = _mm256_set1_epi8(0x0F);
  const __m256i z = _mm256_setzero_si256();
  // The int32 sums, widened once per kInt16Groups groups: in memory (the registers hold the
  // int16 sums of up to 4 rows).
  __m256i acc[2 * kTileRows4];
  for (__m256i& a : acc) a = z;
  const int64_t k = x.k;
  const int8_t* q = x.q + t * k;
  const int8_t* ahead = panel + kAheadBytes;
  const int64_t ahead_groups =
      kAhead ? std::max<int64_t>(0, std::min<int64_t>(groups, (end - ahead) / kGroupBytes4)) : 0;
  if constexpr (kRows == 4) {
    Int4Sums4<true>(q, k, panel, ahead_groups, acc);
    Int4Sums4<false>(q + 4 * ahead_groups, k, panel + ahead_groups * kGroupBytes4,
                     groups - ahead_groups, acc);
    groups = 0;  // done: the loop below is for the other tiles
  }
  for (int64_t g0 = 0; g0 < groups; g0 += kInt16Groups) {
    const int64_t g1 = std::min(groups, g0 + kInt16Groups);
    __m256i h00 = z, h01 = z, h10 = z, h11 = z, h20 = z, h21 = z, h30 = z, h31 = z;
    for (int64_t g = g0; g < g1; ++g) {
      // A line per two groups.
      if (kAhead && g < ahead_groups && g % 2 == 0) {
        _mm_prefetch(ahead + g * kGroupBytes4, _MM_HINT_T0);
      }
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + g * kGroupBytes4));
      const __m256i lo = _mm256_and_si256(b, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), nibble);
      TERN_INT4_ROW(0)
      TERN_INT4_ROW(1)
      TERN_INT4_ROW(2)
      TERN_INT4_ROW(3)
    }
    TERN_INT4_WIDEN(0)
    TERN_INT4_WIDEN(1)
    TERN_INT4_WIDEN(2)
    TERN_INT4_WIDEN(3)
  }
  const __m256i sum0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.sums));
  const __m256i sum1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.sums + 8));
  TERN_INT4_OUT(0)
  TERN_INT4_OUT(1)
  TERN_INT4_OUT(2)
  TERN_INT4_OUT(3)
}

#undef TERN_INT4_ROW
#undef TERN_INT4_WIDEN
#undef TERN_INT4_OUT

using Tile = void (*)(const Block&, int64_t, const int8_t*, int64_t, const int8_t*, const Epilogue&,
                      float*, int64_t);

// The block's rows times every panel: per panel, its rows a tile at a time (the panel's bytes,
// 16 x k, stay in L1 or L2 while the block's rows go by).
__attribute__((target("avx2,fma"))) void BlockTimesPanels(const Block& x, const WeightView& w,
                                                          const float* bias, bool fused, float* y,
                                                          int64_t ldy) {
  static constexpr Tile kFirst[kTileRows] = {SignTile<1, true>, SignTile<2, true>,
                                             SignTile<3, true>, SignTile<4, true>};
  static constexpr Tile kNext[kTileRows] = {SignTile<1, false>, SignTile<2, false>,
                                            SignTile<3, false>, SignTile<4, false>};
  static constexpr Tile kFirst4[kTileRows4] = {Int4Tile<1, true>, Int4Tile<2, true>,
                                               Int4Tile<3, true>, Int4Tile<4, true>};
  static constexpr Tile kNext4[kTileRows4] = {Int4Tile<1, false>, Int4Tile<2, false>,
                                              Int4Tile<3, false>, Int4Tile<4, false>};
  const bool int4 = w.dtype == DType::kI4;
  const int64_t tile = int4 ? kTileRows4 : kTileRows;
  const Tile* first = int4 ? kFirst4 : kFirst;
  const Tile* next = int4 ? kNext4 : kNext;
  const int64_t groups = x.k / 4;
  const int8_t* end = reinterpret_cast<const int8_t*>(w.row(w.rows));
  for (int64_t p = 0; p < w.rows / kSignPanelRows; ++p) {
    const int64_t r = p * kSignPanelRows;
    const int8_t* panel = reinterpret_cast<const int8_t*>(w.row(r));
    const Epilogue e{w.scales + r, bias != nullptr ? bias + r : nullptr, w.row_sums + r, fused};
    for (int64_t t = 0; t < x.rows; t += tile) {
      const int rows = static_cast<int>(std::min<int64_t>(tile, x.rows - t));
      (t == 0 ? first : next)[rows - 1](x, t, panel, groups, end, e, y + t * ldy + r, ldy);
    }
  }
}

// Qd8Params in 8 lanes: lane-wise x < lo ? x : lo is vminps(x, lo) (lo when x is NaN or both
// are zeros), so the lanes, combined in any order, give the scalar loop's range exactly.
__attribute__((target("avx2,fma"))) Qd8Row Params(const float* x, int64_t k) {
  __m256 lo0 = _mm256_setzero_ps(), lo1 = lo0, hi0 = lo0, hi1 = lo0;
  int64_t c = 0;
  for (; c + 16 <= k; c += 16) {
    const __m256 v0 = _mm256_loadu_ps(x + c), v1 = _mm256_loadu_ps(x + c + 8);
    lo0 = _mm256_min_ps(v0, lo0);
    hi0 = _mm256_max_ps(v0, hi0);
    lo1 = _mm256_min_ps(v1, lo1);
    hi1 = _mm256_max_ps(v1, hi1);
  }
  alignas(32) float lanes_lo[8], lanes_hi[8];
  _mm256_store_ps(lanes_lo, _mm256_min_ps(lo1, lo0));
  _mm256_store_ps(lanes_hi, _mm256_max_ps(hi1, hi0));
  float l = 0.0f, h = 0.0f;
  for (int i = 0; i < 8; ++i) {
    l = lanes_lo[i] < l ? lanes_lo[i] : l;
    h = lanes_hi[i] > h ? lanes_hi[i] : h;
  }
  for (; c < k; ++c) {
    l = x[c] < l ? x[c] : l;
    h = x[c] > h ? x[c] : h;
  }
  return Qd8ParamsOfRange(l, h);
}

// A row of x quantized as QuantizeQd8 quantizes it, written as q and |q|: 32 values at a time
// (vminps / vmaxps keep its NaN order: the bound when x is NaN; vcvtps2dq rounds to nearest
// even as its RoundToEven does for these magnitudes), the rest by QuantizeQd8 itself.
__attribute__((target("avx2,fma"))) Qd8Row QuantizeRow(const float* x, int64_t k, int8_t* q,
                                                       uint8_t* abs_q, int32_t* q_sum) {
  const Qd8Row p = Params(x, k);
  const __m256 multiplier = _mm256_set1_ps(1.0f / p.inv_scale);
  const __m256 max_less_zero_point = _mm256_set1_ps(static_cast<float>(127 - p.zero_point));
  const __m256 floor = _mm256_set1_ps(-383.0f);
  const __m256i zero_point = _mm256_set1_epi32(p.zero_point), qmin = _mm256_set1_epi32(-128);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256i sums = _mm256_setzero_si256();
  int64_t c = 0;
  for (; c + 32 <= k; c += 32) {
    __m256i v[4];
    for (int h = 0; h < 4; ++h) {
      __m256 f = _mm256_mul_ps(_mm256_loadu_ps(x + c + 8 * h), multiplier);
      f = _mm256_max_ps(_mm256_min_ps(f, max_less_zero_point), floor);
      v[h] = _mm256_max_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(f), zero_point), qmin);
      sums = _mm256_add_epi32(sums, v[h]);
    }
    // packs work within 128-bit lanes: 0-3 8-11 16-19 24-27 | 4-7 12-15 20-23 28-31, as dwords
    // 0 2 4 6 | 1 3 5 7; `order` puts them back.
    const __m256i bytes = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3])), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + c), bytes);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(abs_q + c), _mm256_abs_epi8(bytes));
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sums);
  int32_t total = 0;
  for (int32_t lane : lanes) total += lane;
  if (c < k) {
    alignas(32) int16_t rest[32];
    QuantizeQd8(x + c, p, k - c, rest);  // q - zero point
    for (int64_t j = 0; j < k - c; ++j) {
      const int v = rest[j] + p.zero_point;
      q[c + j] = static_cast<int8_t>(v);
      abs_q[c + j] = static_cast<uint8_t>(v < 0 ? -v : v);
      total += v;
    }
  }
  *q_sum = total;
  return p;
}

}  // namespace

void SignPanelsLinear(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                      const float* bias, float* y, int64_t ldy) {
  const int64_t k = w.cols;
  if (m < 1 || w.rows < 1) return;
  int64_t per_block = std::min<int64_t>({m, kBlockBytes / k, kMaxBlockRows});
  // Blocks the buffer cuts short end on a whole tile of either dtype (each block streams the
  // weight again).
  constexpr int64_t kWhole = 12;  // a multiple of kTileRows and of kTileRows4
  if (per_block < m && per_block >= kWhole) per_block = per_block / kWhole * kWhole;
  alignas(32) uint8_t abs_q[kBlockBytes];
  alignas(32) int8_t q[kBlockBytes];
  int32_t zero_point[kMaxBlockRows], q_sum[kMaxBlockRows];
  float inv_scale[kMaxBlockRows];
  const bool fused = Qd8EpilogueFused();
  for (int64_t i0 = 0; i0 < m; i0 += per_block) {
    Block b;
    b.rows = std::min(per_block, m - i0);
    b.k = k;
    for (int64_t t = 0; t < b.rows; ++t) {
      const Qd8Row p = QuantizeRow(x + (i0 + t) * ldx, k, q + t * k, abs_q + t * k, q_sum + t);
      zero_point[t] = p.zero_point;
      inv_scale[t] = p.inv_scale;
    }
    b.abs_q = abs_q;
    b.q = q;
    b.zero_point = zero_point;
    b.inv_scale = inv_scale;
    b.q_sum = q_sum;
    BlockTimesPanels(b, w, bias, fused, y + i0 * ldy, ldy);
  }
}

#else

// Other CPUs: sessions never pack for them (SignPanelsBeatXnnpack), but a packed view computes
// the same sums in plain loops.
namespace {
// Row j's column col of the panel at `panel`.
int32_t PackedAt(const WeightView& w, const int8_t* panel, int64_t j, int64_t col) {
  if (w.dtype == DType::kI8) return panel[col / 4 * kGroupBytes + j * 4 + col % 4];
  const auto b = static_cast<uint8_t>(panel[col / 4 * kGroupBytes4 + (j % 8) * 4 + col % 4]);
  return (j < 8 ? (b & 0x0F) : (b >> 4)) - 8;
}
}  // namespace

void SignPanelsLinear(const float* x, int64_t m, int64_t ldx, const WeightView& w,
                      const float* bias, float* y, int64_t ldy) {
  const int64_t k = w.cols;
  const bool fused = Qd8EpilogueFused();
  int16_t piece[kQuantizeStep];
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    const Qd8Row p = Qd8Params(xi, k);
    for (int64_t r = 0; r < w.rows; ++r) {
      const auto* panel =
          reinterpret_cast<const int8_t*>(w.row(r / kSignPanelRows * kSignPanelRows));
      const int64_t j = r % kSignPanelRows;
      int32_t sum = 0;
      for (int64_t c0 = 0; c0 < k; c0 += kQuantizeStep) {
        const int64_t count = std::min(kQuantizeStep, k - c0);
        QuantizeQd8(xi + c0, p, count, piece);
        for (int64_t c = 0; c < count; ++c) {
          const int64_t col = c0 + c;
          sum += int32_t{piece[c]} * PackedAt(w, panel, j, col);
        }
      }
      y[i * ldy + r] =
          Qd8Output(sum, p.inv_scale, w.scales[r], bias != nullptr ? bias + r : nullptr, fused);
    }
  }
}

#endif

}  // namespace tern::vec
