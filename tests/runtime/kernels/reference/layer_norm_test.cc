// ref::LayerNorm for the three NormKinds against double-precision loops, out of place and in
// place (y == x). Tolerance: |y - ref| <= 1e-5 * (|ref| + 1) (the kernel rounds the normalized
// value to float, then multiplies and adds in float).
#include "runtime/kernels/reference/layer_norm.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using tern::ref::NormKind;

// One row, the textbook way, in double.
std::vector<double> RefRow(const float* x, int64_t d, const float* gamma, const float* beta,
                           double eps, NormKind kind) {
  std::vector<double> y(static_cast<size_t>(d));
  double mean = 0.0;
  for (int64_t c = 0; c < d; ++c) mean += x[c];
  mean /= static_cast<double>(d);
  double ss = 0.0;
  for (int64_t c = 0; c < d; ++c) ss += (x[c] - mean) * (x[c] - mean);
  double msq = 0.0;
  for (int64_t c = 0; c < d; ++c) msq += static_cast<double>(x[c]) * x[c];
  msq /= static_cast<double>(d);
  for (int64_t c = 0; c < d; ++c) {
    double normalized = 0.0;
    switch (kind) {
      case NormKind::kLayerNorm:  // (x - mean) / sqrt(var + eps), biased variance
        normalized = (x[c] - mean) / std::sqrt(ss / static_cast<double>(d) + eps);
        break;
      case NormKind::kLayerNormStdEps: {  // Annotated Transformer: (x - mean) / (std + eps)
        const double std_unbiased = d > 1 ? std::sqrt(ss / static_cast<double>(d - 1)) : 0.0;
        normalized = (x[c] - mean) / (std_unbiased + eps);
        break;
      }
      case NormKind::kRMSNorm:  // x / sqrt(mean(x^2) + eps)
        normalized = x[c] / std::sqrt(msq + eps);
        break;
    }
    y[static_cast<size_t>(c)] = normalized * gamma[c] + (beta ? beta[c] : 0.0);
  }
  return y;
}

const char* KindName(NormKind kind) {
  switch (kind) {
    case NormKind::kLayerNorm:
      return "layer_norm";
    case NormKind::kLayerNormStdEps:
      return "std_eps";
    case NormKind::kRMSNorm:
      return "rms";
  }
  return "?";
}

struct Case {
  int64_t m, d;
  std::vector<float> x, gamma, beta;
};

Case MakeCase(std::mt19937& rng, int64_t m, int64_t d, float offset) {
  Case k{m, d, {}, {}, {}};
  std::normal_distribution<float> value(0.0f, 2.0f);
  std::uniform_real_distribution<float> g(0.5f, 1.5f);
  std::uniform_real_distribution<float> b(-0.5f, 0.5f);
  for (int64_t i = 0; i < m * d; ++i) k.x.push_back(offset + value(rng));
  for (int64_t c = 0; c < d; ++c) k.gamma.push_back(g(rng));
  for (int64_t c = 0; c < d; ++c) k.beta.push_back(b(rng));
  return k;
}

void Check(const Case& k, const std::vector<float>& y, bool with_beta, float eps, NormKind kind,
           const char* how) {
  for (int64_t i = 0; i < k.m; ++i) {
    const auto want = RefRow(k.x.data() + i * k.d, k.d, k.gamma.data(),
                             with_beta ? k.beta.data() : nullptr, eps, kind);
    for (int64_t c = 0; c < k.d; ++c) {
      const double got = y[static_cast<size_t>(i * k.d + c)];
      const double w = want[static_cast<size_t>(c)];
      INFO(how << " " << KindName(kind) << " m " << k.m << " d " << k.d << " row " << i << " col "
               << c << " beta " << with_beta << " eps " << eps << " got " << got << " want " << w);
      REQUIRE(std::fabs(got - w) <= 1e-5 * (std::fabs(w) + 1.0));
    }
  }
}

const NormKind kKinds[] = {NormKind::kLayerNorm, NormKind::kLayerNormStdEps, NormKind::kRMSNorm};

}  // namespace

TEST_CASE("LayerNorm: all kinds, random odd shapes, out of place and in place",
          "[kernels][layer_norm]") {
  std::mt19937 rng(501);
  for (NormKind kind : kKinds) {
    for (int64_t d : {1, 2, 3, 7, 13, 33, 512}) {
      for (int64_t m : {1, 3, 5}) {
        for (float offset : {0.0f, 3.0f, 1.0e4f}) {
          for (float eps : {1e-5f, 1e-6f, 0.1f}) {
            for (bool with_beta : {true, false}) {
              const Case k = MakeCase(rng, m, d, offset);
              const float* beta = with_beta ? k.beta.data() : nullptr;
              std::vector<float> y(static_cast<size_t>(m * d + 1), 42.0f);
              tern::ref::LayerNorm(k.x.data(), m, d, k.gamma.data(), beta, eps, kind, y.data());
              REQUIRE(y.back() == 42.0f);  // nothing written past m rows
              y.pop_back();
              Check(k, y, with_beta, eps, kind, "out of place");

              std::vector<float> inplace = k.x;
              tern::ref::LayerNorm(inplace.data(), m, d, k.gamma.data(), beta, eps, kind,
                                   inplace.data());
              Check(k, inplace, with_beta, eps, kind, "in place");
            }
          }
        }
      }
    }
  }
}

TEST_CASE("LayerNorm: worked example", "[kernels][layer_norm]") {
  // x = [1, 2, 3, 4]: mean 2.5, biased var 1.25, unbiased std sqrt(5/3), mean square 7.5.
  const float x[4] = {1, 2, 3, 4};
  const float gamma[4] = {1, 1, 2, 1};
  const float beta[4] = {0, 0, 0, 10};
  float y[4];
  tern::ref::LayerNorm(x, 1, 4, gamma, beta, 0.0f, NormKind::kLayerNorm, y);
  const double s = std::sqrt(1.25);
  REQUIRE(std::fabs(y[0] - (-1.5 / s)) <= 1e-6);
  REQUIRE(std::fabs(y[2] - 2 * (0.5 / s)) <= 1e-6);
  REQUIRE(std::fabs(y[3] - (1.5 / s + 10)) <= 1e-5);
  tern::ref::LayerNorm(x, 1, 4, gamma, beta, 0.0f, NormKind::kLayerNormStdEps, y);
  const double u = std::sqrt(5.0 / 3.0);
  REQUIRE(std::fabs(y[0] - (-1.5 / u)) <= 1e-6);
  tern::ref::LayerNorm(x, 1, 4, gamma, nullptr, 0.0f, NormKind::kRMSNorm, y);
  const double r = std::sqrt(7.5);
  REQUIRE(std::fabs(y[0] - 1 / r) <= 1e-6);
  REQUIRE(std::fabs(y[2] - 2 * 3 / r) <= 1e-6);
}

TEST_CASE("LayerNorm: a constant row normalizes to beta, never NaN", "[kernels][layer_norm]") {
  const float x[5] = {7, 7, 7, 7, 7};
  const float gamma[5] = {1, 2, 3, 4, 5};
  const float beta[5] = {0.5f, -0.5f, 0, 1, 2};
  for (NormKind kind : {NormKind::kLayerNorm, NormKind::kLayerNormStdEps}) {
    float y[5];
    tern::ref::LayerNorm(x, 1, 5, gamma, beta, 1e-5f, kind, y);
    for (int c = 0; c < 5; ++c) REQUIRE(y[c] == beta[c]);
  }
  // RMSNorm of a constant row c: c / sqrt(c^2 + eps) ~ 1, times gamma.
  float y[5];
  tern::ref::LayerNorm(x, 1, 5, gamma, nullptr, 1e-5f, NormKind::kRMSNorm, y);
  for (int c = 0; c < 5; ++c)
    REQUIRE(std::fabs(y[c] - gamma[c] * 7.0 / std::sqrt(49.0 + 1e-5)) <= 1e-5);
}
