// converter/quantize.h: Encode / Decode checked against the raw encoded bytes, unpacked here.
// int8 per row and int4 per group: scale = max|w| / 127 (or / 7), |w - scale * q| <= scale / 2
// (times 1 + 1e-4 for the float rounding of w / scale), q clamped symmetric; zero rows; f16, f32.
// int4 per row: a searched scale in [max|w| / 14, max|w| / 7] whose squared error is at most
// max-abs scaling's, every weight on its nearest level, the ones beyond +-7 levels clipped.
#include "converter/quantize.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "converter/error.h"
#include "tests/support/half.h"

namespace {

using tern::DType;
using tern::convert::Decode;
using tern::convert::Encode;
using tern::convert::EncodedTensor;
using tern::convert::HostTensor;

HostTensor Random(std::mt19937& rng, const std::vector<int64_t>& shape, float spread = 1.0f) {
  HostTensor t;
  t.name = "layers.0.fc1.weight";
  t.shape = shape;
  std::normal_distribution<float> value(0.0f, spread);
  t.values.resize(static_cast<size_t>(t.elements()));
  for (auto& v : t.values) v = value(rng);
  return t;
}

using tern::testing::HalfToDouble;

int Nibble(const EncodedTensor& e, int64_t row_bytes, int64_t r, int64_t c) {
  const int byte = e.data[static_cast<size_t>(r * row_bytes + c / 2)];
  const int n = (c % 2) ? byte >> 4 : byte & 0xF;
  return n >= 8 ? n - 16 : n;
}

// Checks an encoded i8/i4 tensor against the source: layout, scales, bounds, error, Decode.
void CheckQuantized(const HostTensor& t, const EncodedTensor& e, DType dtype, int64_t group) {
  const int64_t rows = t.shape[0];
  const int64_t cols = t.elements() / rows;
  const int limit = dtype == DType::kI8 ? 127 : 7;
  const int64_t span = group > 0 ? group : cols;
  const int64_t groups = (cols + span - 1) / span;
  const int64_t row_bytes = dtype == DType::kI8 ? cols : (cols + 1) / 2;
  REQUIRE(e.name == t.name);
  REQUIRE(e.dtype == dtype);
  REQUIRE(e.shape == t.shape);
  REQUIRE(e.group_size == group);
  REQUIRE(e.scales.size() == static_cast<size_t>(rows * groups));
  REQUIRE(e.data.size() == static_cast<size_t>(rows * row_bytes));
  const std::vector<float> decoded = Decode(e);
  REQUIRE(decoded.size() == t.values.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * span;
      const int64_t end = std::min(begin + span, cols);
      double max_abs = 0.0;
      for (int64_t c = begin; c < end; ++c) {
        max_abs = std::fmax(max_abs, std::fabs(t.values[static_cast<size_t>(r * cols + c)]));
      }
      const double scale = e.scales[static_cast<size_t>(r * groups + g)];
      INFO("rows " << rows << " cols " << cols << " group " << group << " r " << r << " g " << g);
      // int4 per row searches its scale (quantize.cc's RowScaleInt4); every other case is
      // max-abs scaling.
      const bool searched = dtype == DType::kI4 && group == 0;
      if (searched) {
        REQUIRE(scale <= max_abs / limit * (1 + 1e-6));
        REQUIRE(scale >= max_abs / limit * 0.5 * (1 - 1e-6));
        double error = 0.0, max_abs_error = 0.0;
        const double max_abs_scale = static_cast<float>(max_abs / limit);
        for (int64_t c = begin; c < end; ++c) {
          const double w = t.values[static_cast<size_t>(r * cols + c)];
          const int q = Nibble(e, row_bytes, r, c);
          error += (w - scale * q) * (w - scale * q);
          const double q0 =
              max_abs_scale == 0.0
                  ? 0.0
                  : std::fmax(-limit, std::fmin(limit, std::round(w / max_abs_scale)));
          max_abs_error += (w - max_abs_scale * q0) * (w - max_abs_scale * q0);
        }
        REQUIRE(error <= max_abs_error * (1 + 1e-6) + 1e-30);
      } else {
        REQUIRE(std::fabs(scale - max_abs / limit) <= 1e-6 * max_abs / limit);
      }
      for (int64_t c = begin; c < end; ++c) {
        const int q = dtype == DType::kI8
                          ? static_cast<int8_t>(e.data[static_cast<size_t>(r * row_bytes + c)])
                          : Nibble(e, row_bytes, r, c);
        const double w = t.values[static_cast<size_t>(r * cols + c)];
        INFO("c " << c << " w " << w << " q " << q << " scale " << scale);
        REQUIRE(q >= -limit);
        REQUIRE(q <= limit);
        if (std::fabs(w) <= limit * scale * (1 + 1e-6)) {
          REQUIRE(std::fabs(w - scale * q) <= scale / 2 * (1 + 1e-4) + 1e-30);
        } else {  // clipped (a searched scale): the outermost level of its sign
          REQUIRE(searched);
          REQUIRE(q == (w > 0 ? limit : -limit));
        }
        // Decode is the dequantized value, scale * q, up to the float product.
        REQUIRE(std::fabs(decoded[static_cast<size_t>(r * cols + c)] - scale * q) <=
                1e-6 * std::fabs(scale * q));
      }
    }
    if (dtype == DType::kI4 && cols % 2 == 1) {  // padding nibble of the row is zero
      REQUIRE((e.data[static_cast<size_t>(r * row_bytes + row_bytes - 1)] >> 4) == 0);
    }
  }
}

}  // namespace

TEST_CASE("Quantize: int8 per row", "[converter][quantize]") {
  std::mt19937 rng(1101);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t cols : {1, 7, 13, 33}) {
      for (float spread : {1e-3f, 1.0f, 50.0f}) {
        const HostTensor t = Random(rng, {rows, cols}, spread);
        CheckQuantized(t, Encode(t, DType::kI8), DType::kI8, 0);
      }
    }
  }
  // Rank 3: rows are dims[0], the rest are columns.
  const HostTensor t3 = Random(rng, {3, 5, 7});
  CheckQuantized(t3, Encode(t3, DType::kI8), DType::kI8, 0);
}

TEST_CASE("Quantize: int4 grouped by 8 and per row", "[converter][quantize]") {
  std::mt19937 rng(1102);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t cols : {9, 13, 33}) {  // more columns than a group: groups are kept
      const HostTensor t = Random(rng, {rows, cols});
      CheckQuantized(t, Encode(t, DType::kI4, 8), DType::kI4, 8);
      CheckQuantized(t, Encode(t, DType::kI4, 3), DType::kI4, 3);
      CheckQuantized(t, Encode(t, DType::kI4, 0), DType::kI4, 0);
    }
  }
}

TEST_CASE("Quantize: an int4 group as wide as the row or wider is per row",
          "[converter][quantize]") {
  std::mt19937 rng(1103);
  for (int64_t cols : {1, 7, 8}) {
    const HostTensor t = Random(rng, {3, cols});
    CheckQuantized(t, Encode(t, DType::kI4, 8), DType::kI4, 0);
  }
}

TEST_CASE("Quantize: zero rows and groups give scale 0 and decode to 0", "[converter][quantize]") {
  HostTensor t;
  t.name = "w";
  t.shape = {3, 9};
  t.values.assign(27, 0.0f);
  for (int c = 0; c < 9; ++c)
    t.values[static_cast<size_t>(9 + c)] = 0.1f * static_cast<float>(c + 1);
  t.values[20] = -0.0f;
  for (DType dtype : {DType::kI8, DType::kI4}) {
    const EncodedTensor e = Encode(t, dtype, dtype == DType::kI4 ? 4 : 0);
    const std::vector<float> d = Decode(e);
    for (int c = 0; c < 9; ++c) {
      REQUIRE(d[static_cast<size_t>(c)] == 0.0f);
      REQUIRE(d[static_cast<size_t>(18 + c)] == 0.0f);
      REQUIRE_FALSE(std::isnan(d[static_cast<size_t>(c)]));
    }
    REQUIRE(e.scales[0] == 0.0f);
    REQUIRE(e.scales.back() == 0.0f);
    CheckQuantized(t, e, dtype, dtype == DType::kI4 ? 4 : 0);
  }
}

TEST_CASE("Quantize: the largest magnitude maps to +-limit, never -limit - 1",
          "[converter][quantize]") {
  HostTensor t;
  t.name = "w";
  t.shape = {3, 4};
  t.values = {2.0f,  -1.0f, 0.5f,   1.0f,   // max +2 -> 127 / 7
              -3.0f, 1.5f,  3.0f,   0.0f,   // +-3 -> +-limit
              -0.7f, 0.1f,  -0.35f, 0.2f};  // max |-0.7| -> -limit
  {
    const EncodedTensor e = Encode(t, DType::kI8);
    auto q = [&](int i) { return static_cast<int8_t>(e.data[static_cast<size_t>(i)]); };
    REQUIRE(q(0) == 127);
    REQUIRE(q(4) == -127);
    REQUIRE(q(6) == 127);
    REQUIRE(q(8) == -127);
    for (uint8_t b : e.data) REQUIRE(static_cast<int8_t>(b) != -128);
    CheckQuantized(t, e, DType::kI8, 0);
  }
  {
    const EncodedTensor e = Encode(t, DType::kI4);
    REQUIRE(Nibble(e, 2, 0, 0) == 7);
    REQUIRE(Nibble(e, 2, 1, 0) == -7);
    REQUIRE(Nibble(e, 2, 1, 2) == 7);
    REQUIRE(Nibble(e, 2, 2, 0) == -7);
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = 0; c < 4; ++c) REQUIRE(Nibble(e, 2, r, c) != -8);
    }
    CheckQuantized(t, e, DType::kI4, 0);
  }
}

TEST_CASE("Quantize: q stays clamped when a subnormal scale rounds down", "[converter][quantize]") {
  // With float-subnormal weights, max|w| / limit rounds to a multiple of denorm_min, so w / scale
  // can exceed the limit: 190 units / 127 -> scale 1 unit -> 190, and 10 units / 7 -> 1 unit ->
  // 10. The clamp must hold q to +-limit (never -limit - 1).
  const float unit = std::numeric_limits<float>::denorm_min();
  HostTensor t;
  t.name = "tiny";
  t.shape = {2, 3};
  t.values = {190 * unit, -190 * unit, 5 * unit,  //
              -10 * unit, 10 * unit,   unit};
  const EncodedTensor e8 = Encode(t, DType::kI8);
  REQUIRE(static_cast<int8_t>(e8.data[0]) == 127);
  REQUIRE(static_cast<int8_t>(e8.data[1]) == -127);
  const EncodedTensor e4 = Encode(t, DType::kI4);
  REQUIRE(Nibble(e4, 2, 1, 0) == -7);
  REQUIRE(Nibble(e4, 2, 1, 1) == 7);
  for (const EncodedTensor* e : {&e8, &e4}) {
    const std::vector<float> d = Decode(*e);
    for (size_t i = 0; i < d.size(); ++i) {
      REQUIRE(std::fabs(d[i]) <= std::fabs(t.values[i < 3 ? 0 : 3]));  // never beyond max|w|
    }
  }
}

TEST_CASE("Quantize: f16 round trip", "[converter][quantize]") {
  std::mt19937 rng(1104);
  HostTensor t = Random(rng, {7, 13});
  // Values that are exact halves survive bit-exactly; others within half an ulp (2^-11 rel).
  t.values[0] = 1.0f;
  t.values[1] = -65504.0f;
  t.values[2] = std::ldexp(1.0f, -24);
  t.values[3] = 0.333251953125f;
  t.values[4] = -0.0f;
  const EncodedTensor e = Encode(t, DType::kF16);
  REQUIRE(e.dtype == DType::kF16);
  REQUIRE(e.data.size() == t.values.size() * 2);
  REQUIRE(e.scales.empty());
  const std::vector<float> d = Decode(e);
  for (size_t i = 0; i < t.values.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, &e.data[2 * i], 2);
    INFO("i " << i << " value " << t.values[i] << " half 0x" << std::hex << h);
    REQUIRE(static_cast<double>(d[i]) == HalfToDouble(h));
    REQUIRE(std::fabs(HalfToDouble(h) - t.values[i]) <=
            std::fabs(t.values[i]) * std::ldexp(1.0, -11));
  }
  REQUIRE(d[0] == 1.0f);
  REQUIRE(d[1] == -65504.0f);
  REQUIRE(d[2] == std::ldexp(1.0f, -24));
  REQUIRE(d[3] == 0.333251953125f);
  REQUIRE(std::signbit(d[4]));
  // Rank-1 tensors may be f16 (only quantized dtypes need a matrix).
  HostTensor bias;
  bias.name = "bias";
  bias.shape = {5};
  bias.values = {0.5f, -0.25f, 2.0f, 1024.0f, -1.0f};
  REQUIRE(Decode(Encode(bias, DType::kF16)) == bias.values);
}

TEST_CASE("Quantize: f32 is stored verbatim", "[converter][quantize]") {
  std::mt19937 rng(1105);
  const HostTensor t = Random(rng, {3, 7});
  const EncodedTensor e = Encode(t, DType::kF32);
  REQUIRE(e.data.size() == t.values.size() * 4);
  REQUIRE(std::memcmp(e.data.data(), t.values.data(), e.data.size()) == 0);
  REQUIRE(Decode(e) == t.values);
}

TEST_CASE("Quantize: errors name the tensor", "[converter][quantize]") {
  HostTensor vec;
  vec.name = "decoder.layer_norm.bias";
  vec.shape = {4};
  vec.values = {1, 2, 3, 4};
  using Catch::Matchers::ContainsSubstring;
  REQUIRE_THROWS_WITH(Encode(vec, DType::kI8), ContainsSubstring("decoder.layer_norm.bias"));
  REQUIRE_THROWS_WITH(Encode(vec, DType::kI4, 2), ContainsSubstring("decoder.layer_norm.bias"));
  REQUIRE_THROWS_WITH(Encode(vec, DType::kI32), ContainsSubstring("decoder.layer_norm.bias"));
  REQUIRE_THROWS_AS(Encode(vec, DType::kI8), tern::convert::Error);
}

TEST_CASE("Quantize: int4 per row searches a scale with clearly less error than max-abs",
          "[converter][quantize]") {
  // Gaussian rows of 512 weights: max|w| is about 3 sigma, so max-abs scaling puts the levels
  // 0.43 sigma apart; the searched scale clips the tails and rounds the bulk finer.
  std::mt19937 rng(1104);
  const HostTensor t = Random(rng, {16, 512});
  const EncodedTensor e = Encode(t, DType::kI4, 0);
  CheckQuantized(t, e, DType::kI4, 0);
  double searched = 0.0, max_abs_error = 0.0;
  for (int64_t r = 0; r < 16; ++r) {
    double max_abs = 0.0;
    for (int64_t c = 0; c < 512; ++c) {
      max_abs = std::fmax(max_abs, std::fabs(t.values[static_cast<size_t>(r * 512 + c)]));
    }
    const double s0 = max_abs / 7;
    for (int64_t c = 0; c < 512; ++c) {
      const double w = t.values[static_cast<size_t>(r * 512 + c)];
      const double d = w - e.scales[static_cast<size_t>(r)] * Nibble(e, 256, r, c);
      const double d0 = w - s0 * std::fmax(-7, std::fmin(7, std::round(w / s0)));
      searched += d * d;
      max_abs_error += d0 * d0;
    }
  }
  INFO("searched " << searched << " max-abs " << max_abs_error);
  REQUIRE(searched < 0.8 * max_abs_error);  // measured 0.70
}
