#include "runtime/kernels/vectorized/attention.h"

#include <cmath>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "runtime/kernels/vectorized/denormals.h"
#include "runtime/kernels/vectorized/half.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

// An fp16 K/V row widened: the portable way (branch-free, vectorized by the compiler).
__attribute__((always_inline)) inline void WidenKV(const Half* x, int64_t n, float* y) {
  WidenRow(x, n, y);
}

#include "runtime/kernels/vectorized/attention_loops.inc"

TERN_VECTOR_CLONES
void AttendHalf(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v, int64_t ldv,
                int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                const ref::RelativePositions* rel, int64_t kv_heads) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
// The same loops compiled for x86-64-v3 (AVX2, FMA, F16C: the level of the float loops' AVX2
// clone), where a row of fp16 keys or values becomes
// floats with one vcvtph2ps per 8: GCC 12 vectorizes neither _Float16 conversions nor (in a
// target_clones clone, whose baseline twin must compile too) F16C intrinsics, and the portable
// conversion costs about ten vector instructions per 8 values, which made a batch-16 step with
// fp16 caches slower than with float ones. Picked at run time on x86-64-v3 CPUs.
#define TERN_HAVE_F16C_LOOPS 1
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace f16c {
namespace {

__attribute__((always_inline)) inline void WidenKV(const Half* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) y[i] = Widen(x[i]);
}

#include "runtime/kernels/vectorized/attention_loops.inc"

}  // namespace

void AttendHalf(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v, int64_t ldv,
                int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                const ref::RelativePositions* rel, int64_t kv_heads) {
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

}  // namespace f16c
#pragma GCC pop_options
#endif

TERN_VECTOR_CLONES
void MultiHeadAttention(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel, int64_t kv_heads) {
  const FlushDenormals flushed;  // the weighted sums' tiny weights: see denormals.h
  Attend(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

void MultiHeadAttention(const float* q, int64_t ldq, const Half* k, int64_t ldk, const Half* v,
                        int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                        const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel, int64_t kv_heads) {
  const FlushDenormals flushed;
#ifdef TERN_HAVE_F16C_LOOPS
  // The CPUs whose float loops run the x86-64-v3 clone (the same level, so that both compile
  // alike and halves give floats' bits).
  static const bool v3 = __builtin_cpu_supports("x86-64-v3");
  if (v3) {
    f16c::AttendHalf(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel,
                     kv_heads);
    return;
  }
#endif
  AttendHalf(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel, kv_heads);
}

}  // namespace tern::vec
