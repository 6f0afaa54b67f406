// vec::Max and vec::LogSumExp (the log-softmax normalizer of greedy scoring and beam search)
// against double-precision loops, on rows of vocabulary size and on the edge cases: short rows,
// masked (-inf) entries, a fully masked row, large offsets. vec::ArgMax (greedy's choice)
// against the scalar rule it replaced: ties, NaNs, -inf, the maximum in any lane and the tail.
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

// The scalar loop greedy decoding used before vec::ArgMax: the lowest index wins ties, a NaN
// never wins (unless every entry is NaN: 0).
int32_t ReferenceArgMax(const std::vector<float>& x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i])) best = i;
  }
  return static_cast<int32_t>(best);
}

TEST_CASE("vec::ArgMax picks the first largest, skipping NaNs", "[vectorized][log_sum_exp]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(12);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  for (int64_t n : {0, 1, 2, 15, 16, 17, 31, 33, 1000, 32000}) {
    std::vector<float> x(static_cast<size_t>(n) + 1);
    for (int trial = 0; trial < 40; ++trial) {
      for (auto& v : x) v = dist(rng);
      // Every trial places the maximum (and a tie after it, and NaNs and -inf) elsewhere: in
      // any lane of a block, in the tail, first and last.
      if (n > 0) {
        const int64_t at = trial < 2 ? (trial == 0 ? 0 : n - 1) : static_cast<int64_t>(rng() % n);
        x[at] = 100.0f;
        if (trial % 3 == 0 && at + 5 < n) x[at + 5] = 100.0f;
        if (trial % 4 == 1) x[rng() % n] = nan;
        if (trial % 5 == 2) x[rng() % n] = kNegInf;
        if (trial % 7 == 3) x[0] = nan;
      }
      INFO("n = " << n << ", trial = " << trial);
      CHECK(vec::ArgMax(x.data(), n) == ReferenceArgMax(x, n));
    }
  }
  std::vector<float> all_nan(40, nan);
  CHECK(vec::ArgMax(all_nan.data(), 40) == 0);
  all_nan[37] = kNegInf;  // the only number: it wins, as in the scalar rule
  CHECK(vec::ArgMax(all_nan.data(), 40) == 37);
  std::vector<float> masked(50, kNegInf);
  CHECK(vec::ArgMax(masked.data(), 50) == 0);
  masked[20] = nan;
  masked[33] = 1.0f;
  CHECK(vec::ArgMax(masked.data(), 50) == 33);
  std::vector<float> ties(64, 1.0f);
  CHECK(vec::ArgMax(ties.data(), 64) == 0);
}

}  // namespace
}  // namespace tern
