// ref::Embedding against a plain double-precision lookup: f32, f16, i8 (per row) and i4 (grouped)
// tables, with and without an embedding scale. Tolerance: 1e-6 relative (the kernel does at
// most two float roundings per element: dequantize, then scale).
#include "runtime/kernels/reference/embedding.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/support/half.h"

namespace {

using tern::DType;
using tern::WeightView;

using tern::testing::HalfToDouble;

uint16_t RandomFiniteHalf(std::mt19937& rng, int max_exponent = 20) {
  for (;;) {
    const uint16_t h = static_cast<uint16_t>(rng());
    if (((h >> 10) & 31) <= max_exponent) return h;
  }
}

std::vector<int32_t> RandomIds(std::mt19937& rng, int64_t count, int64_t vocab) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(static_cast<size_t>(count));
  for (auto& id : ids) id = dist(rng);
  ids[0] = static_cast<int32_t>(vocab - 1);  // The last row is reachable.
  if (count > 1) ids[1] = 0;
  return ids;
}

// out[t][c] == expected(ids[t], c) * scale within 1e-6 relative; the float after the last row is
// a sentinel the kernel must not touch.
template <typename Expected>
void CheckLookup(const WeightView& table, const std::vector<int32_t>& ids, float scale,
                 Expected expected) {
  const int64_t d = table.cols;
  const int64_t count = static_cast<int64_t>(ids.size());
  std::vector<float> out(static_cast<size_t>(count * d + 1), -12345.0f);
  tern::ref::Embedding(table, ids.data(), count, scale, out.data());
  for (int64_t t = 0; t < count; ++t) {
    for (int64_t c = 0; c < d; ++c) {
      const double want = expected(ids[static_cast<size_t>(t)], c) * static_cast<double>(scale);
      const double got = out[static_cast<size_t>(t * d + c)];
      INFO("t=" << t << " id=" << ids[static_cast<size_t>(t)] << " c=" << c << " d=" << d
                << " scale=" << scale);
      REQUIRE(std::fabs(got - want) <= 1e-6 * std::fabs(want) + 1e-30);
    }
  }
  REQUIRE(out.back() == -12345.0f);
}

const float kScales[] = {1.0f, 5.656854f, 0.37f, -2.0f};

}  // namespace

TEST_CASE("Embedding: f32 table rows times the scale", "[kernels][embedding]") {
  std::mt19937 rng(101);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  for (int64_t vocab : {1, 3, 13}) {
    for (int64_t d : {1, 7, 33}) {
      std::vector<float> table(static_cast<size_t>(vocab * d));
      for (auto& v : table) v = value(rng);
      WeightView w;
      w.dtype = DType::kF32;
      w.data = table.data();
      w.rows = vocab;
      w.cols = d;
      const auto ids = RandomIds(rng, 9, vocab);
      for (float scale : kScales) {
        CheckLookup(w, ids, scale, [&](int32_t id, int64_t c) {
          return static_cast<double>(table[static_cast<size_t>(id * d + c)]);
        });
      }
    }
  }
}

TEST_CASE("Embedding: scale 1 copies f32 rows bit-exactly", "[kernels][embedding]") {
  const float table[] = {0.1f, 0.2f, 0.3f, -0.0f, 1e-40f, 3.0e38f};  // 3 rows x 2
  WeightView w;
  w.dtype = DType::kF32;
  w.data = table;
  w.rows = 3;
  w.cols = 2;
  const int32_t ids[] = {2, 1, 0, 2};
  float out[8];
  tern::ref::Embedding(w, ids, 4, 1.0f, out);
  const int expect_rows[] = {2, 1, 0, 2};
  for (int t = 0; t < 4; ++t) {
    for (int c = 0; c < 2; ++c) {
      REQUIRE(std::memcmp(&out[t * 2 + c], &table[expect_rows[t] * 2 + c], 4) == 0);
    }
  }
}

TEST_CASE("Embedding: f16 table", "[kernels][embedding]") {
  std::mt19937 rng(102);
  for (int64_t vocab : {1, 7, 13}) {
    for (int64_t d : {1, 3, 13}) {
      std::vector<uint16_t> table(static_cast<size_t>(vocab * d));
      for (auto& h : table) h = RandomFiniteHalf(rng);
      table[0] = 0x0001;  // smallest subnormal
      WeightView w;
      w.dtype = DType::kF16;
      w.data = table.data();
      w.rows = vocab;
      w.cols = d;
      const auto ids = RandomIds(rng, 7, vocab);
      for (float scale : kScales) {
        CheckLookup(w, ids, scale, [&](int32_t id, int64_t c) {
          return HalfToDouble(table[static_cast<size_t>(id * d + c)]);
        });
      }
    }
  }
}

TEST_CASE("Embedding: i8 table with per-row scales", "[kernels][embedding]") {
  std::mt19937 rng(103);
  std::uniform_int_distribution<int> q(-128, 127);
  std::uniform_real_distribution<float> s(0.001f, 0.5f);
  for (int64_t vocab : {1, 3, 13}) {
    for (int64_t d : {1, 7, 33}) {
      std::vector<int8_t> table(static_cast<size_t>(vocab * d));
      for (auto& v : table) v = static_cast<int8_t>(q(rng));
      table[0] = -128;
      std::vector<float> scales(static_cast<size_t>(vocab));
      for (auto& v : scales) v = s(rng);
      WeightView w;
      w.dtype = DType::kI8;
      w.data = table.data();
      w.rows = vocab;
      w.cols = d;
      w.scales = scales.data();
      const auto ids = RandomIds(rng, 11, vocab);
      for (float scale : kScales) {
        CheckLookup(w, ids, scale, [&](int32_t id, int64_t c) {
          return static_cast<double>(scales[static_cast<size_t>(id)]) *
                 table[static_cast<size_t>(id * d + c)];
        });
      }
    }
  }
}

TEST_CASE("Embedding: i4 table with grouped scales", "[kernels][embedding]") {
  std::mt19937 rng(104);
  std::uniform_int_distribution<int> q(-8, 7);
  std::uniform_real_distribution<float> s(0.01f, 0.9f);
  const int64_t vocab = 5;
  const int64_t d = 13;  // Odd: rows are 7 bytes, the last high nibble is padding.
  const int64_t group = 4;
  const int64_t groups = 4;
  std::vector<int> values(static_cast<size_t>(vocab * d));
  for (auto& v : values) v = q(rng);
  const int64_t row_bytes = (d + 1) / 2;
  std::vector<uint8_t> packed(static_cast<size_t>(vocab * row_bytes), 0);
  for (int64_t r = 0; r < vocab; ++r) {
    for (int64_t c = 0; c < d; ++c) {
      const uint8_t nibble = static_cast<uint8_t>(values[static_cast<size_t>(r * d + c)] & 0xF);
      packed[static_cast<size_t>(r * row_bytes + c / 2)] |=
          static_cast<uint8_t>(c % 2 ? nibble << 4 : nibble);
    }
  }
  std::vector<float> scales(static_cast<size_t>(vocab * groups));
  for (auto& v : scales) v = s(rng);
  WeightView w;
  w.dtype = DType::kI4;
  w.data = packed.data();
  w.rows = vocab;
  w.cols = d;
  w.scales = scales.data();
  w.group_size = group;
  const auto ids = RandomIds(rng, 9, vocab);
  for (float scale : kScales) {
    CheckLookup(w, ids, scale, [&](int32_t id, int64_t c) {
      return static_cast<double>(scales[static_cast<size_t>(id * groups + c / group)]) *
             values[static_cast<size_t>(id * d + c)];
    });
  }
}

TEST_CASE("Embedding: count 0 writes nothing", "[kernels][embedding]") {
  const float table[] = {1.0f, 2.0f};
  WeightView w;
  w.dtype = DType::kF32;
  w.data = table;
  w.rows = 1;
  w.cols = 2;
  float out[2] = {7.0f, 7.0f};
  tern::ref::Embedding(w, nullptr, 0, 3.0f, out);
  REQUIRE(out[0] == 7.0f);
  REQUIRE(out[1] == 7.0f);
}
