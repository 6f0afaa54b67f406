// ref::SoftmaxRows against softmax in double (max-subtracted), plus stability cases: huge
// values (+-1e30, 1000) that overflow a naive exp, partially and fully -inf rows.
// Tolerance: |y - ref| <= 1e-5 * ref + 1e-7 (float exp and one float sum).
#include "runtime/kernels/reference/softmax.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

const float kInf = std::numeric_limits<float>::infinity();

std::vector<double> RefSoftmax(const float* x, int64_t cols) {
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < cols; ++c) max = std::fmax(max, x[c]);
  std::vector<double> y(static_cast<size_t>(cols), 0.0);
  if (std::isinf(max) && max < 0) return y;  // fully masked -> zeros
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(x[c]) - max);
  for (int64_t c = 0; c < cols; ++c)
    y[static_cast<size_t>(c)] = std::exp(static_cast<double>(x[c]) - max) / sum;
  return y;
}

void CheckRows(const std::vector<float>& in, int64_t rows, int64_t cols) {
  std::vector<float> x = in;
  x.push_back(123.0f);  // sentinel
  tern::ref::SoftmaxRows(x.data(), rows, cols);
  REQUIRE(x.back() == 123.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const auto want = RefSoftmax(in.data() + r * cols, cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double got = x[static_cast<size_t>(r * cols + c)];
      const double w = want[static_cast<size_t>(c)];
      INFO("rows " << rows << " cols " << cols << " r " << r << " c " << c << " in "
                   << in[static_cast<size_t>(r * cols + c)] << " got " << got << " want " << w);
      REQUIRE(std::isfinite(got));
      REQUIRE(std::fabs(got - w) <= 1e-5 * w + 1e-7);
    }
  }
}

}  // namespace

TEST_CASE("Softmax: random rows against double", "[kernels][softmax]") {
  std::mt19937 rng(601);
  std::normal_distribution<float> value(0.0f, 4.0f);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t cols : {1, 2, 3, 13, 33, 100}) {
      std::vector<float> x(static_cast<size_t>(rows * cols));
      for (auto& v : x) v = value(rng);
      CheckRows(x, rows, cols);
      // Rows sum to one.
      std::vector<float> y = x;
      tern::ref::SoftmaxRows(y.data(), rows, cols);
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) sum += y[static_cast<size_t>(r * cols + c)];
        REQUIRE(std::fabs(sum - 1.0) <= 1e-5);
      }
    }
  }
}

TEST_CASE("Softmax: huge values stay finite and exact", "[kernels][softmax]") {
  // Each row alone; a naive exp() overflows on all of them.
  const std::vector<std::vector<float>> rows = {
      {1e30f, -1e30f, 0.0f, 1e30f},          // -> [0.5, 0, 0, 0.5]
      {-1e30f, -1e30f, -1e30f},              // -> uniform thirds
      {1000.0f, 999.0f},                     // -> [0.731, 0.269]
      {88.0f, 89.0f, 100.0f, -88.0f, 0.0f},  // exp(100) overflows float
      {3.0e38f, 3.0e38f, -3.0e38f},          // near FLT_MAX: x - max must not overflow
  };
  for (const auto& row : rows) CheckRows(row, 1, static_cast<int64_t>(row.size()));
  std::vector<float> x = {1e30f, -1e30f, 0.0f, 1e30f};
  tern::ref::SoftmaxRows(x.data(), 1, 4);
  REQUIRE(x[0] == 0.5f);
  REQUIRE(x[1] == 0.0f);
  REQUIRE(x[2] == 0.0f);
  REQUIRE(x[3] == 0.5f);
  std::vector<float> t = {-1e30f, -1e30f, -1e30f};
  tern::ref::SoftmaxRows(t.data(), 1, 3);
  for (float v : t) REQUIRE(std::fabs(v - 1.0 / 3.0) <= 1e-7);
}

TEST_CASE("Softmax: -inf entries are exact zeros; a fully -inf row becomes zeros",
          "[kernels][softmax]") {
  // Row 0 partially masked, row 1 fully masked, row 2 ordinary: rows stay independent.
  std::vector<float> x = {-kInf, 0.0f,  -kInf, 1.0f,   //
                          -kInf, -kInf, -kInf, -kInf,  //
                          0.0f,  0.0f,  0.0f,  0.0f};
  tern::ref::SoftmaxRows(x.data(), 3, 4);
  const double e = std::exp(1.0);
  REQUIRE(x[0] == 0.0f);
  REQUIRE(x[2] == 0.0f);
  REQUIRE(std::fabs(x[1] - 1.0 / (1.0 + e)) <= 1e-7);
  REQUIRE(std::fabs(x[3] - e / (1.0 + e)) <= 1e-7);
  for (int c = 4; c < 8; ++c) {
    REQUIRE_FALSE(std::isnan(x[static_cast<size_t>(c)]));
    REQUIRE(x[static_cast<size_t>(c)] == 0.0f);
  }
  for (int c = 8; c < 12; ++c) REQUIRE(x[static_cast<size_t>(c)] == 0.25f);
  // A single -inf column.
  float one = -kInf;
  tern::ref::SoftmaxRows(&one, 1, 1);
  REQUIRE(one == 0.0f);
}

TEST_CASE("Softmax: one column is always 1", "[kernels][softmax]") {
  std::vector<float> x = {-5.0f, 0.0f, 1e30f, -1e30f, 7.0f};
  tern::ref::SoftmaxRows(x.data(), 5, 1);
  for (float v : x) REQUIRE(v == 1.0f);
}
