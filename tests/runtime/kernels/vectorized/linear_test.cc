// vec::Linear, the XNNPACK backend's kernel for layers XNNPACK has no operator for: the reference
// kernel's outputs to float rounding for every weight dtype and layout (per row, blocks that
// span its chunks of 256 columns, odd blocks, tails), on tiles of rows with strides; a row's
// outputs are the same bits alone as inside a batch.
#include "runtime/kernels/vectorized/linear.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/kernels/reference/linear.h"
#include "tests/runtime/kernels/vectorized/random_weights.h"

namespace tern {
namespace {

using vec_test::Layout;
using vec_test::RandomWeights;
using vec_test::Weights;

TEST_CASE("vec::Linear computes ref::Linear's outputs for every weight layout",
          "[vectorized][linear]") {
  const Layout layouts[] = {
      {"f32", DType::kF32, 0},
      {"f16", DType::kF16, 0},
      {"int8 per row", DType::kI8, 0},
      {"int8 blocks of 24", DType::kI8, 24},
      {"int4 per row", DType::kI4, 0},
      {"int4 blocks of 8", DType::kI4, 8},
      {"int4 blocks of 32", DType::kI4, 32},
      {"int4 blocks of 24", DType::kI4, 24},
      {"int4 blocks of 3", DType::kI4, 3},
  };
  // k: below one lane group, a tail, exactly one chunk, chunks with a tail (blocks of 24 and 3
  // then span the chunk boundary at 256, and odd blocks start on odd columns).
  const int64_t ks[] = {5, 33, 256, 300, 531};
  const int64_t ms[] = {1, 3, 8, 19};
  std::mt19937 rng(5);
  for (const Layout& l : layouts) {
    for (int64_t k : ks) {
      if (l.group > k) continue;
      const int64_t n = 37;
      Weights w = RandomWeights(l, n, k, &rng);
      const std::vector<float> bias = vec_test::RandomValues(n, &rng);
      for (int64_t m : ms) {
        for (bool with_bias : {true, false}) {
          INFO(l.name << ", k " << k << ", m " << m << (with_bias ? ", bias" : ", no bias"));
          const int64_t ldx = k + 3, ldy = n + 5;  // strides wider than the rows
          std::vector<float> x = vec_test::RandomValues(m * ldx, &rng);
          const float* b = with_bias ? bias.data() : nullptr;
          std::vector<float> want(static_cast<size_t>(m * ldy), -7.0f);
          std::vector<float> got(static_cast<size_t>(m * ldy), -7.0f);
          ref::Linear(x.data(), m, ldx, w.view, b, want.data(), ldy);
          vec::Linear(x.data(), m, ldx, w.view, b, got.data(), ldy);
          int bad = 0;
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < ldy; ++j) {
              const size_t at = static_cast<size_t>(i * ldy + j);
              if (j >= n) {  // between rows: never written
                if (got[at] != -7.0f && ++bad <= 3) UNSCOPED_INFO("wrote column " << j);
                continue;
              }
              // Only the order of the sums differs: bound by the sum of the products' sizes.
              double size = with_bias ? std::fabs(bias[static_cast<size_t>(j)]) : 0.0;
              for (int64_t c = 0; c < k; ++c) {
                size += std::fabs(static_cast<double>(x[static_cast<size_t>(i * ldx + c)]) *
                                  WeightAt(w.view, j, c));
              }
              if (std::fabs(got[at] - want[at]) > 2e-6 * size + 1e-30 && ++bad <= 3) {
                UNSCOPED_INFO("row " << i << " column " << j << ": " << got[at] << " vs "
                                     << want[at]);
              }
            }
          }
          CHECK(bad == 0);
          // Each row alone: the same bits as in the tile it shared with the others.
          for (int64_t i = 0; i < m; ++i) {
            std::vector<float> alone(static_cast<size_t>(n));
            vec::Linear(x.data() + i * ldx, 1, ldx, w.view, b, alone.data(), n);
            CHECK(std::memcmp(alone.data(), got.data() + i * ldy, alone.size() * sizeof(float)) ==
                  0);
          }
        }
      }
    }
  }
}

TEST_CASE("vec::Linear with no rows writes nothing", "[vectorized][linear]") {
  std::mt19937 rng(1);
  Weights w = RandomWeights({"int4 blocks of 8", DType::kI4, 8}, 4, 16, &rng);
  float y = -7.0f;
  vec::Linear(nullptr, 0, 16, w.view, nullptr, &y, 4);
  CHECK(y == -7.0f);
}

}  // namespace
}  // namespace tern
