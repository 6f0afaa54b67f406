// vec::QuantizeQd8 a piece at a time gives what it gives for the whole row (the kernels quantize
// 1024 columns at a time with the row's parameters). That it matches XNNPACK's own quantization
// is tested with XNNPACK (tests/runtime/kernels/xnnpack/linear_test.cc, the shortlist's row
// kernel against the full projection, to the bit).
#include "runtime/kernels/vectorized/qd8.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <random>
#include <vector>

namespace tern {
namespace {

TEST_CASE("vec::QuantizeQd8 in pieces equals the whole row", "[vectorized][qd8]") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-3.0f, 5.0f);
  for (int64_t k : {1, 7, 1024, 2500}) {
    std::vector<float> x(static_cast<size_t>(k));
    for (float& v : x) v = value(rng);
    std::vector<int16_t> whole(x.size()), pieces(x.size(), 999);
    const vec::Qd8Row p = vec::QuantizeQd8(x.data(), k, whole.data());
    const vec::Qd8Row q = vec::Qd8Params(x.data(), k);
    CHECK(p.zero_point == q.zero_point);
    CHECK(p.inv_scale == q.inv_scale);
    for (int64_t c = 0; c < k; c += 300) {
      vec::QuantizeQd8(x.data() + c, q, std::min<int64_t>(300, k - c), pieces.data() + c);
    }
    CHECK(pieces == whole);
    // Every value dequantizes to within half a step of x (the range includes 0).
    for (int64_t c = 0; c < k; ++c) {
      CHECK(std::abs(whole[c] * p.inv_scale - x[c]) <= 0.5f * p.inv_scale * 1.0001f);
    }
  }
}

}  // namespace
}  // namespace tern
