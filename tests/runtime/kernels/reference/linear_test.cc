// ref::Linear (y = x W^T + b) against a double-precision loop over weights decoded here from the
// raw bytes (never through runtime/core/tensor.h). Tolerance: |y - ref| <= 1e-5 * sum_c |x_c w_c|
// + 1e-5 * |b| + 1e-30 (float accumulation of k <= 33 products; float dequantization adds one
// rounding per weight).
#include "runtime/kernels/reference/linear.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/half.h"

namespace {

using tern::DType;
using tern::WeightView;

using tern::testing::HalfToDouble;

// A weight matrix in one dtype, with its values as doubles kept beside it.
struct TestWeight {
  WeightView view;
  std::vector<uint8_t> bytes;
  std::vector<float> scales;
  std::vector<double> values;  // [n, k] decoded independently
};

TestWeight MakeF32(std::mt19937& rng, int64_t n, int64_t k) {
  TestWeight t;
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  t.bytes.resize(static_cast<size_t>(n * k * 4));
  t.values.resize(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < n * k; ++i) {
    const float v = value(rng);
    std::memcpy(&t.bytes[static_cast<size_t>(i * 4)], &v, 4);
    t.values[static_cast<size_t>(i)] = v;
  }
  t.view.dtype = DType::kF32;
  return t;
}

TestWeight MakeF16(std::mt19937& rng, int64_t n, int64_t k) {
  TestWeight t;
  t.bytes.resize(static_cast<size_t>(n * k * 2));
  t.values.resize(static_cast<size_t>(n * k));
  for (int64_t i = 0; i < n * k; ++i) {
    uint16_t h;
    do {
      h = static_cast<uint16_t>(rng());
    } while (((h >> 10) & 31) > 16);  // |w| < 4, subnormals included
    std::memcpy(&t.bytes[static_cast<size_t>(i * 2)], &h, 2);
    t.values[static_cast<size_t>(i)] = HalfToDouble(h);
  }
  t.view.dtype = DType::kF16;
  return t;
}

TestWeight MakeI8(std::mt19937& rng, int64_t n, int64_t k) {
  TestWeight t;
  std::uniform_int_distribution<int> q(-128, 127);
  std::uniform_real_distribution<float> s(0.001f, 0.05f);
  t.bytes.resize(static_cast<size_t>(n * k));
  t.values.resize(static_cast<size_t>(n * k));
  t.scales.resize(static_cast<size_t>(n));
  for (auto& v : t.scales) v = s(rng);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const int8_t v = static_cast<int8_t>(r == 0 && c == 0 ? -128 : q(rng));
      t.bytes[static_cast<size_t>(r * k + c)] = static_cast<uint8_t>(v);
      t.values[static_cast<size_t>(r * k + c)] =
          static_cast<double>(t.scales[static_cast<size_t>(r)]) * v;
    }
  }
  t.view.dtype = DType::kI8;
  return t;
}

// Packed i4: rows of (k + 1) / 2 bytes, low nibble first, two's complement.
TestWeight MakeI4(std::mt19937& rng, int64_t n, int64_t k, int64_t group_size) {
  TestWeight t;
  std::uniform_int_distribution<int> q(-8, 7);
  std::uniform_real_distribution<float> s(0.01f, 0.2f);
  const int64_t row_bytes = (k + 1) / 2;
  const int64_t groups = group_size > 0 ? (k + group_size - 1) / group_size : 1;
  t.bytes.assign(static_cast<size_t>(n * row_bytes), 0);
  t.values.resize(static_cast<size_t>(n * k));
  t.scales.resize(static_cast<size_t>(n * groups));
  for (auto& v : t.scales) v = s(rng);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const int v = (c == 0 && r == 0) ? -8 : (c == 1 && r == 0) ? 7 : q(rng);
      const uint8_t nibble = static_cast<uint8_t>(v & 0xF);
      t.bytes[static_cast<size_t>(r * row_bytes + c / 2)] |=
          static_cast<uint8_t>(c % 2 ? nibble << 4 : nibble);
      const int64_t g = group_size > 0 ? c / group_size : 0;
      t.values[static_cast<size_t>(r * k + c)] =
          static_cast<double>(t.scales[static_cast<size_t>(r * groups + g)]) * v;
    }
  }
  t.view.dtype = DType::kI4;
  t.view.group_size = group_size;
  return t;
}

void Finish(TestWeight& t, int64_t n, int64_t k) {
  t.view.data = t.bytes.data();
  t.view.rows = n;
  t.view.cols = k;
  t.view.scales = t.scales.empty() ? nullptr : t.scales.data();
}

// Runs Linear with strides ldx = k + pad_x, ldy = n + pad_y. x's padding holds NaN (it must
// not be read) and y's padding a sentinel (it must not be written).
void CheckLinear(std::mt19937& rng, const TestWeight& w, int64_t m, bool with_bias, int64_t pad_x,
                 int64_t pad_y) {
  const int64_t n = w.view.rows;
  const int64_t k = w.view.cols;
  const int64_t ldx = k + pad_x;
  const int64_t ldy = n + pad_y;
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(m * ldx), std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(i * ldx + c)] = value(rng);
  }
  std::vector<float> bias(static_cast<size_t>(n));
  for (auto& b : bias) b = value(rng);
  const float sentinel = -777.0f;
  std::vector<float> y(static_cast<size_t>(m * ldy), sentinel);
  tern::ref::Linear(x.data(), m, ldx, w.view, with_bias ? bias.data() : nullptr, y.data(), ldy);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.0;
      double magnitude = 0.0;
      for (int64_t c = 0; c < k; ++c) {
        const double p = static_cast<double>(x[static_cast<size_t>(i * ldx + c)]) *
                         w.values[static_cast<size_t>(j * k + c)];
        want += p;
        magnitude += std::fabs(p);
      }
      if (with_bias) {
        want += bias[static_cast<size_t>(j)];
        magnitude += std::fabs(bias[static_cast<size_t>(j)]);
      }
      const double got = y[static_cast<size_t>(i * ldy + j)];
      INFO("dtype " << static_cast<int>(w.view.dtype) << " group " << w.view.group_size << " m "
                    << m << " n " << n << " k " << k << " i " << i << " j " << j << " bias "
                    << with_bias << " got " << got << " want " << want);
      REQUIRE(std::fabs(got - want) <= 1e-5 * magnitude + 1e-30);
    }
    for (int64_t j = n; j < ldy; ++j) REQUIRE(y[static_cast<size_t>(i * ldy + j)] == sentinel);
  }
}

template <typename Make>
void Sweep(uint32_t seed, Make make) {
  std::mt19937 rng(seed);
  for (int64_t k : {1, 7, 13, 33}) {
    for (int64_t n : {1, 3, 13}) {
      TestWeight w = make(rng, n, k);
      Finish(w, n, k);
      for (int64_t m : {1, 3, 7}) {
        for (bool bias : {false, true}) {
          CheckLinear(rng, w, m, bias, 0, 0);  // dense
          CheckLinear(rng, w, m, bias, 5, 3);  // strided rows
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("Linear: f32 weights", "[kernels][linear]") { Sweep(301, MakeF32); }

TEST_CASE("Linear: f16 weights", "[kernels][linear]") { Sweep(302, MakeF16); }

TEST_CASE("Linear: i8 weights with per-row scales", "[kernels][linear]") { Sweep(303, MakeI8); }

TEST_CASE("Linear: i4 weights with per-row scales", "[kernels][linear]") {
  Sweep(304, [](std::mt19937& rng, int64_t n, int64_t k) { return MakeI4(rng, n, k, 0); });
}

TEST_CASE("Linear: i4 weights grouped by 8 columns", "[kernels][linear]") {
  // k = 13 and 33 end in a partial group (5 and 1 columns); k = 1 and 7 are one partial group.
  Sweep(305, [](std::mt19937& rng, int64_t n, int64_t k) { return MakeI4(rng, n, k, 8); });
}

TEST_CASE("Linear: i4 weights grouped by 3 columns (groups straddle bytes)", "[kernels][linear]") {
  Sweep(306, [](std::mt19937& rng, int64_t n, int64_t k) { return MakeI4(rng, n, k, 3); });
}

TEST_CASE("Linear: a hand-computed 2x3 example", "[kernels][linear]") {
  // W = [[1, 2, 3], [-1, 0, 0.5]], b = [0.5, -1], x = [[1, 1, 1], [2, -1, 4]]
  const float w[6] = {1, 2, 3, -1, 0, 0.5f};
  const float b[2] = {0.5f, -1};
  const float x[6] = {1, 1, 1, 2, -1, 4};
  tern::WeightView view;
  view.dtype = DType::kF32;
  view.data = w;
  view.rows = 2;
  view.cols = 3;
  float y[4];
  tern::ref::Linear(x, 2, 3, view, b, y, 2);
  REQUIRE(y[0] == 6.5f);   // 1 + 2 + 3 + 0.5
  REQUIRE(y[1] == -1.5f);  // -1 + 0 + 0.5 - 1
  REQUIRE(y[2] == 12.5f);  // 2 - 2 + 12 + 0.5
  REQUIRE(y[3] == -1.0f);  // -2 + 0 + 2 - 1
}
