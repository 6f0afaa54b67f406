// The vectorizable LayerNorm and activations (kernels/vectorized/, run by the XNNPACK backend)
// against the reference kernels, with the tolerances their float arithmetic and approximations
// allow (stated per check).
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <random>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "runtime/kernels/reference/activations.h"
#include "runtime/kernels/reference/layer_norm.h"
#include "runtime/kernels/vectorized/activations.h"
#include "runtime/kernels/vectorized/attention.h"
#include "runtime/kernels/vectorized/denormals.h"
#include "runtime/kernels/vectorized/layer_norm.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern {
namespace {

TEST_CASE("xnnpack LayerNorm matches the reference", "[xnnpack][layer_norm]") {
  std::mt19937 rng(3);
  for (ref::NormKind kind :
       {ref::NormKind::kLayerNorm, ref::NormKind::kLayerNormStdEps, ref::NormKind::kRMSNorm}) {
    for (int64_t d : {1, 7, 16, 33, 512}) {
      for (float offset : {0.0f, 30.0f}) {  // rows with a large mean: the centered second pass
        const int64_t m = 5;
        std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
        std::vector<float> x(static_cast<size_t>(m * d)), gamma(static_cast<size_t>(d)),
            beta(gamma);
        for (auto& v : x) v = dist(rng) + offset;
        for (auto& v : gamma) v = 1.0f + 0.2f * dist(rng);
        for (auto& v : beta) v = 0.1f * dist(rng);
        const float* b = kind == ref::NormKind::kRMSNorm ? nullptr : beta.data();
        std::vector<float> want(x.size()), got(x.size());
        ref::LayerNorm(x.data(), m, d, gamma.data(), b, 1e-5f, kind, want.data());
        vec::LayerNorm(x.data(), m, d, gamma.data(), b, 1e-5f, kind, got.data());
        // In place gives the same.
        std::vector<float> in_place = x;
        vec::LayerNorm(in_place.data(), m, d, gamma.data(), b, 1e-5f, kind, in_place.data());
        // Float sums instead of double: a few float roundings of the normalized value, which
        // for rows with mean/std ~ 30 lose about log2(30) more bits.
        for (size_t i = 0; i < x.size(); ++i) {
          INFO("kind " << static_cast<int>(kind) << " d " << d << " offset " << offset << " i "
                       << i);
          CHECK(std::fabs(got[i] - want[i]) <= 2e-5f * (1.0f + std::fabs(want[i])));
          CHECK(in_place[i] == got[i]);
        }
      }
    }
  }
}

TEST_CASE("xnnpack exp and erf approximations", "[xnnpack][activations]") {
  double worst_exp = 0.0, worst_erf = 0.0;
  for (float y = -87.0f; y <= 88.0f; y += 0.0137f) {
    worst_exp =
        std::fmax(worst_exp, std::fabs(vec::Exp(y) / std::exp(static_cast<double>(y)) - 1.0));
  }
  for (float x = -6.0f; x <= 6.0f; x += 0.00071f) {
    worst_erf = std::fmax(worst_erf, std::fabs(vec::Erf(x) - std::erf(static_cast<double>(x))));
  }
  INFO("exp relative error " << worst_exp << ", erf absolute error " << worst_erf);
  CHECK(worst_exp < 3e-7);
  CHECK(worst_erf < 1e-6);
  CHECK(vec::Exp(-200.0f) > 0.0f);  // clamped, finite
  CHECK(std::isfinite(vec::Exp(200.0f)));
}

TEST_CASE("xnnpack activations match the reference", "[xnnpack][activations]") {
  std::vector<float> x;
  for (float v = -30.0f; v <= 30.0f; v += 0.0173f) x.push_back(v);
  x.push_back(0.0f);
  x.push_back(-100.0f);
  x.push_back(100.0f);
  for (ref::Activation act :
       {ref::Activation::kReLU, ref::Activation::kGELU, ref::Activation::kSwish,
        ref::Activation::kGELUTanh, ref::Activation::kSwiGLU, ref::Activation::kGeGLU}) {
    std::vector<float> want = x, got = x;
    ref::Activate(act, want.data(), static_cast<int64_t>(want.size()));
    vec::Activate(act, got.data(), static_cast<int64_t>(got.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("activation " << static_cast<int>(act) << " x " << x[i] << " got " << got[i] << " want "
                         << want[i]);
      // erf to 1e-6 absolute (times |x| / 2 in GELU); exp to 3e-7 relative; plus float rounding.
      CHECK(std::fabs(got[i] - want[i]) <=
            1e-6f * (1.0f + std::fabs(x[i])) + 1e-6f * std::fabs(want[i]));
    }
  }
}

#if defined(__x86_64__)
// denormals.h: the activations and attention loops run with MXCSR's flush-to-zero and
// denormals-are-zero bits set (a denormal input reads as 0, so its Swish is exactly 0, not half
// of it), and leave the caller's control bits as they found them, set or not (the exception
// flags are sticky: the float arithmetic inside may raise some).
TEST_CASE("vectorized activations and attention flush denormals inside, not after",
          "[xnnpack][activations][attention]") {
  const unsigned entry = _mm_getcsr();
  const float tiny = 1e-39f;  // denormal
  REQUIRE(std::fpclassify(tiny) == FP_SUBNORMAL);
  for (unsigned caller :
       {entry & ~vec::FlushDenormals::kBits, entry | vec::FlushDenormals::kBits}) {
    INFO("caller's MXCSR " << caller);
    _mm_setcsr(caller);
    float x[2] = {tiny, 2.0f};
    vec::Activate(ref::Activation::kSwish, x, 2);
    const unsigned control = ~vec::FlushDenormals::kFlags;
    const unsigned after_activate = _mm_getcsr() & control;
    CHECK(x[0] == 0.0f);
    CHECK(std::fabs(x[1] - 2.0f / (1.0f + std::exp(-2.0f))) < 1e-6f);
    // One head, one key: the output is the value row itself, a denormal one included.
    const float q[4] = {1, 0, 0, 0}, k[4] = {1, 0, 0, 0}, v[4] = {tiny, 1, -1, 0.5f};
    float scores[1], out[4];
    ref::AttentionMask mask;
    mask.key_length = 1;
    vec::MultiHeadAttention(q, 4, k, 4, v, 4, 1, 1, 1, 4, mask, scores, out, 4);
    const unsigned after_attention = _mm_getcsr() & control;
    _mm_setcsr(entry);
    CHECK(after_activate == (caller & control));
    CHECK(after_attention == (caller & control));
    CHECK(out[0] == 0.0f);
    CHECK(out[1] == 1.0f);
    CHECK(out[3] == 0.5f);
  }
  CHECK(_mm_getcsr() == entry);
}
#endif

}  // namespace
}  // namespace tern

// TERN_WITH_XNNPACK
