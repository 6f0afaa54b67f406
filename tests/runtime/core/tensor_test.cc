// WeightView / Int4At / WeightAt / DequantizeRow for every dtype, over bytes built by hand, and
// DTypeRowBytes / DTypeName.
#include "runtime/core/tensor.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"

namespace {

using tern::DType;
using tern::WeightView;

WeightView View(DType dtype, const void* data, int64_t rows, int64_t cols,
                const float* scales = nullptr, int64_t group_size = 0) {
  WeightView w;
  w.dtype = dtype;
  w.data = data;
  w.rows = rows;
  w.cols = cols;
  w.scales = scales;
  w.group_size = group_size;
  return w;
}

// Checks WeightAt(r, c) == want[r][c] for all elements and DequantizeRow for all rows; the float
// after each dequantized row is a sentinel.
void CheckAll(const WeightView& w, const std::vector<float>& want) {
  for (int64_t r = 0; r < w.rows; ++r) {
    std::vector<float> row(static_cast<size_t>(w.cols + 1), -999.0f);
    tern::DequantizeRow(w, r, row.data());
    for (int64_t c = 0; c < w.cols; ++c) {
      const float e = want[static_cast<size_t>(r * w.cols + c)];
      INFO("dtype " << tern::DTypeName(w.dtype) << " r " << r << " c " << c);
      REQUIRE(tern::WeightAt(w, r, c) == e);
      REQUIRE(row[static_cast<size_t>(c)] == e);
    }
    REQUIRE(row.back() == -999.0f);
  }
}

}  // namespace

TEST_CASE("DType: names and row sizes", "[core][tensor]") {
  REQUIRE(std::string(tern::DTypeName(DType::kF32)) == "f32");
  REQUIRE(std::string(tern::DTypeName(DType::kF16)) == "f16");
  REQUIRE(std::string(tern::DTypeName(DType::kI8)) == "i8");
  REQUIRE(std::string(tern::DTypeName(DType::kI4)) == "i4");
  REQUIRE(std::string(tern::DTypeName(DType::kI32)) == "i32");
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{13}, size_t{33}}) {
    REQUIRE(tern::DTypeRowBytes(DType::kF32, n) == 4 * n);
    REQUIRE(tern::DTypeRowBytes(DType::kF16, n) == 2 * n);
    REQUIRE(tern::DTypeRowBytes(DType::kI8, n) == n);
    REQUIRE(tern::DTypeRowBytes(DType::kI4, n) == n / 2 + n % 2);
    REQUIRE(tern::DTypeRowBytes(DType::kI32, n) == 4 * n);
  }
}

TEST_CASE("Int4At: every byte, both nibbles, two's complement, low nibble first",
          "[core][tensor]") {
  for (int b = 0; b < 256; ++b) {
    const uint8_t row[1] = {static_cast<uint8_t>(b)};
    const int low = b & 0xF;
    const int high = b >> 4;
    INFO("byte " << b);
    REQUIRE(tern::Int4At(row, 0) == (low < 8 ? low : low - 16));
    REQUIRE(tern::Int4At(row, 1) == (high < 8 ? high : high - 16));
  }
  // Column c lives in byte c / 2.
  const uint8_t row[3] = {0x21, 0x43, 0x8F};  // values 1, 2, 3, 4, -1, -8
  const int want[6] = {1, 2, 3, 4, -1, -8};
  for (int c = 0; c < 6; ++c) REQUIRE(tern::Int4At(row, c) == want[c]);
}

TEST_CASE("WeightView: row bytes, row addresses, groups and scales", "[core][tensor]") {
  const uint8_t bytes[64] = {};
  float scales[12];
  for (int i = 0; i < 12; ++i) scales[i] = static_cast<float>(i) + 0.5f;
  const WeightView i4 = View(DType::kI4, bytes, 3, 13, scales, 4);
  REQUIRE(i4.row_bytes() == 7);
  REQUIRE(i4.row(0) == bytes);
  REQUIRE(i4.row(2) == bytes + 14);
  REQUIRE(i4.groups_per_row() == 4);  // 13 columns in groups of 4: 4, 4, 4, 1
  REQUIRE(i4.scale(0, 0) == 0.5f);
  REQUIRE(i4.scale(0, 3) == 0.5f);
  REQUIRE(i4.scale(0, 4) == 1.5f);
  REQUIRE(i4.scale(0, 12) == 3.5f);
  REQUIRE(i4.scale(1, 0) == 4.5f);
  REQUIRE(i4.scale(2, 12) == 11.5f);
  const WeightView i8 = View(DType::kI8, bytes, 3, 13, scales, 0);
  REQUIRE(i8.row_bytes() == 13);
  REQUIRE(i8.row(2) == bytes + 26);
  REQUIRE(i8.groups_per_row() == 1);
  REQUIRE(i8.scale(2, 12) == 2.5f);  // per row
  const WeightView f16 = View(DType::kF16, bytes, 3, 7);
  REQUIRE(f16.row_bytes() == 14);
  REQUIRE(f16.row(1) == bytes + 14);
}

TEST_CASE("WeightAt / DequantizeRow: f32", "[core][tensor]") {
  const std::vector<float> values = {0.1f, -2.0f, 3.5e-40f, 1e30f, -0.0f, 7.25f};  // 2 x 3
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  CheckAll(View(DType::kF32, bytes.data(), 2, 3), values);
}

TEST_CASE("WeightAt / DequantizeRow: f16", "[core][tensor]") {
  // Little-endian halves written byte by byte: 1, -2, 0.333251953125 (0x3555), 2^-24 (0x0001),
  // 65504 (0x7BFF), -0 (0x8000), 0.5 (0x3800), 2^-14 (0x0400), -inf (0xFC00).
  const uint8_t bytes[18] = {0x00, 0x3C, 0x00, 0xC0, 0x55, 0x35, 0x01, 0x00, 0xFF,
                             0x7B, 0x00, 0x80, 0x00, 0x38, 0x00, 0x04, 0x00, 0xFC};
  const std::vector<float> want = {1.0f,
                                   -2.0f,
                                   0.333251953125f,
                                   std::ldexp(1.0f, -24),
                                   65504.0f,
                                   -0.0f,
                                   0.5f,
                                   std::ldexp(1.0f, -14),
                                   -std::numeric_limits<float>::infinity()};
  CheckAll(View(DType::kF16, bytes, 3, 3), want);
  float row[3];
  tern::DequantizeRow(View(DType::kF16, bytes, 3, 3), 1, row);
  REQUIRE(std::signbit(row[2]));  // -0 keeps its sign
}

TEST_CASE("WeightAt / DequantizeRow: i8 per row and grouped", "[core][tensor]") {
  // 2 x 5: row 0 = [1, -1, 127, -128, 0], row 1 = [5, 10, -3, 64, -64]
  const uint8_t bytes[10] = {0x01, 0xFF, 0x7F, 0x80, 0x00, 0x05, 0x0A, 0xFD, 0x40, 0xC0};
  const int q[10] = {1, -1, 127, -128, 0, 5, 10, -3, 64, -64};
  const float row_scales[2] = {0.5f, 0.25f};
  std::vector<float> want(10);
  for (int i = 0; i < 10; ++i)
    want[static_cast<size_t>(i)] = row_scales[i / 5] * static_cast<float>(q[i]);
  CheckAll(View(DType::kI8, bytes, 2, 5, row_scales, 0), want);

  // Groups of 2 columns: 3 groups per row, the last of one column.
  const float group_scales[6] = {1.0f, 2.0f, 4.0f, 0.125f, 0.25f, 8.0f};
  for (int i = 0; i < 10; ++i) {
    const int r = i / 5, c = i % 5;
    want[static_cast<size_t>(i)] = group_scales[r * 3 + c / 2] * static_cast<float>(q[i]);
  }
  CheckAll(View(DType::kI8, bytes, 2, 5, group_scales, 2), want);
}

TEST_CASE("WeightAt / DequantizeRow: i8 random matrices, rows long enough to vectorize",
          "[core][tensor]") {
  // DequantizeRow's int8 loop runs per group with the scale hoisted (vectorized): every width
  // around the vector lengths and groups that end mid-vector.
  std::mt19937 rng(902);
  std::uniform_int_distribution<int> qd(-128, 127);
  std::uniform_real_distribution<float> sd(0.001f, 3.0f);
  for (int64_t cols : {1, 15, 16, 17, 64, 100, 515}) {
    for (int64_t group : {0, 1, 32, 7}) {
      const int64_t rows = 3;
      const int64_t groups = group > 0 ? (cols + group - 1) / group : 1;
      std::vector<int8_t> q(static_cast<size_t>(rows * cols));
      std::vector<float> scales(static_cast<size_t>(rows * groups));
      for (auto& v : q) v = static_cast<int8_t>(qd(rng));
      for (auto& s : scales) s = sd(rng);
      std::vector<float> want(q.size());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          want[static_cast<size_t>(r * cols + c)] =
              scales[static_cast<size_t>(r * groups + (group > 0 ? c / group : 0))] *
              static_cast<float>(q[static_cast<size_t>(r * cols + c)]);
        }
      }
      INFO("cols " << cols << " group " << group);
      CheckAll(View(DType::kI8, q.data(), rows, cols, scales.data(), group), want);
    }
  }
}

TEST_CASE("WeightAt / DequantizeRow: i4 per row and grouped, odd columns", "[core][tensor]") {
  // 3 x 5, rows of 3 bytes (the high nibble of each row's last byte is padding, set to garbage).
  // row 0: [1, 2, 3, 4, 5]    -> 0x21 0x43 0x?5
  // row 1: [-1, -2, -8, 7, 0] -> 0xEF 0x78 0x?0
  // row 2: [-7, 6, -5, 4, -3] -> 0x69 0x4B 0x?D
  const uint8_t bytes[9] = {0x21, 0x43, 0xF5, 0xEF, 0x78, 0xA0, 0x69, 0x4B, 0x7D};
  const int q[15] = {1, 2, 3, 4, 5, -1, -2, -8, 7, 0, -7, 6, -5, 4, -3};
  const float row_scales[3] = {0.5f, 3.0f, 0.0625f};
  std::vector<float> want(15);
  for (int i = 0; i < 15; ++i)
    want[static_cast<size_t>(i)] = row_scales[i / 5] * static_cast<float>(q[i]);
  CheckAll(View(DType::kI4, bytes, 3, 5, row_scales, 0), want);

  // Groups of 3: 2 groups per row (3 + 2 columns).
  const float group_scales[6] = {1.0f, 10.0f, 0.5f, 2.0f, 0.25f, 4.0f};
  for (int i = 0; i < 15; ++i) {
    const int r = i / 5, c = i % 5;
    want[static_cast<size_t>(i)] = group_scales[r * 2 + c / 3] * static_cast<float>(q[i]);
  }
  CheckAll(View(DType::kI4, bytes, 3, 5, group_scales, 3), want);
}

TEST_CASE("WeightAt / DequantizeRow: i4 random matrices", "[core][tensor]") {
  std::mt19937 rng(901);
  std::uniform_int_distribution<int> qd(-8, 7);
  std::uniform_real_distribution<float> sd(0.01f, 2.0f);
  for (int64_t rows : {1, 3, 7}) {
    for (int64_t cols : {1, 7, 13, 33}) {
      for (int64_t group : {0, 1, 8, 13}) {
        const int64_t row_bytes = (cols + 1) / 2;
        const int64_t groups = group > 0 ? (cols + group - 1) / group : 1;
        std::vector<uint8_t> bytes(static_cast<size_t>(rows * row_bytes), 0);
        std::vector<float> scales(static_cast<size_t>(rows * groups));
        for (auto& s : scales) s = sd(rng);
        std::vector<float> want(static_cast<size_t>(rows * cols));
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            const int v = qd(rng);
            bytes[static_cast<size_t>(r * row_bytes + c / 2)] |=
                static_cast<uint8_t>((v & 0xF) << (4 * (c % 2)));
            want[static_cast<size_t>(r * cols + c)] =
                scales[static_cast<size_t>(r * groups + (group > 0 ? c / group : 0))] *
                static_cast<float>(v);
          }
        }
        CheckAll(View(DType::kI4, bytes.data(), rows, cols, scales.data(), group), want);
      }
    }
  }
}

TEST_CASE("WeightAt / DequantizeRow: i32", "[core][tensor]") {
  // [7, -1, 65536, -2147483648] little-endian.
  const uint8_t bytes[16] = {0x07, 0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF,
                             0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80};
  const std::vector<float> want = {7.0f, -1.0f, 65536.0f, -2147483648.0f};
  CheckAll(View(DType::kI32, bytes, 2, 2), want);
}
