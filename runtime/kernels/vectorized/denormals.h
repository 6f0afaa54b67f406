// Denormal (subnormal) floats, 0 < |v| < 2^-126, cost x86 cores a microcode assist of a hundred
// cycles or more for each instruction that makes or reads one. The vectorized loops meet them on
// ordinary values: GCC if-converts vec::Exp's clamps, so every lane also computes the clamped
// side and a blend keeps one. Swish's clamped side is x / (1 + e^88), denormal for any |x| below
// ~2, so a SwiGLU FFN's activation ran ten times slower on typical inputs than on huge ones
// (1536 values: 9.5 us, 0.9 us flushed), about 30% of a SmolLM-shaped prompt's time. Attention's
// weighted sums meet them too (e^(s - max) near e^-87 times a value).
//
// FlushDenormals sets the x86 flush-to-zero and denormals-are-zero bits of MXCSR for its scope
// and restores the caller's bits on exit, on the thread that runs the loop (a pool's thread too:
// each part opens its own). What changes is what would have been denormal: it becomes 0, an
// absolute change below 1.2e-38. Only these loops run flushed; XNNPACK's kernels and the
// caller's code see the caller's settings. Elsewhere it does nothing: AArch32's NEON always
// flushes, AArch64 cores handle subnormals in hardware (not measured here).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace tern::vec {

class FlushDenormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kBits = 0x8040;  // MXCSR: FTZ (bit 15), DAZ (bit 6)
  static constexpr unsigned kFlags = 0x3F;   // MXCSR: the exception flags
  FlushDenormals() : saved_(_mm_getcsr()) {
    if ((saved_ & kBits) != kBits) _mm_setcsr(saved_ | kBits);
  }
  // The exception flags (bits 0-5, sticky) raised inside are kept, as if nothing were set.
  ~FlushDenormals() {
    if ((saved_ & kBits) != kBits) _mm_setcsr(saved_ | (_mm_getcsr() & kFlags));
  }

 private:
  unsigned saved_;
#else
  FlushDenormals() {}  // user-provided, so that a scope's guard is not an unused variable
  ~FlushDenormals() {}
#endif
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;
};

}  // namespace tern::vec
