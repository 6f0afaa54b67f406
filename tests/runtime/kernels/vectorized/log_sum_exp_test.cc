// vec::Max and vec::LogSumExp (the log-softmax normalizer of greedy scoring and beam search)
// against double-precision loops, on rows of vocabulary size and on the edge cases: short rows,
// masked (-inf) entries, a fully masked row, large offsets.
#include "runtime/kernels/vectorized/log_sum_exp.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tern {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

double ReferenceLogSumExp(const std::vector<float>& x) {
  double max = -std::numeric_limits<double>::infinity();
  for (float v : x) max = v > max ? v : max;
  if (max == -std::numeric_limits<double>::infinity()) return max;
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
}

TEST_CASE("vec::LogSumExp matches double precision", "[vectorized][log_sum_exp]") {
  std::mt19937 rng(11);
  for (int64_t n : {1, 5, 16, 17, 255, 256, 257, 1000, 32000}) {
    for (float offset : {0.0f, -40.0f, 25.0f}) {
      std::normal_distribution<float> dist(offset, 4.0f);
      std::vector<float> x(static_cast<size_t>(n));
      for (auto& v : x) v = dist(rng);
      if (n > 3) x[static_cast<size_t>(n / 2)] = kNegInf;  // a masked token (EOS before min_length)
      const double want = ReferenceLogSumExp(x);
      const float got = vec::LogSumExp(x.data(), n);
      // Log-probabilities are row[v] - LogSumExp: an absolute error in it is the error of every
      // log-probability; 2e-6 (relative to the magnitude) keeps beam scores far from flipping
      // on anything but exact float ties.
      INFO("n = " << n << ", offset = " << offset);
      CHECK(std::fabs(got - want) <= 2e-6 * std::fmax(1.0, std::fabs(want)));
      float max = kNegInf;
      for (float v : x) max = v > max ? v : max;
      CHECK(vec::Max(x.data(), n) == max);
    }
  }
}

TEST_CASE("vec::LogSumExp of masked and empty rows", "[vectorized][log_sum_exp]") {
  std::vector<float> masked(300, kNegInf);
  CHECK(vec::LogSumExp(masked.data(), 300) == kNegInf);
  CHECK(vec::LogSumExp(masked.data(), 0) == kNegInf);
  CHECK(vec::Max(masked.data(), 0) == kNegInf);
  masked[299] = 3.5f;  // one token left: log-probability 0 for it
  CHECK(vec::LogSumExp(masked.data(), 300) == 3.5f);
  std::vector<float> equal(1024, 2.0f);  // uniform: max + log(n)
  CHECK(std::fabs(vec::LogSumExp(equal.data(), 1024) - (2.0f + std::log(1024.0f))) <= 1e-5f);
}

}  // namespace
}  // namespace tern
