// ref::SinusoidalPositions and ref::AddRows. Golden values: the seed's "I love cats" example
// (d_model = 4, /work/shared/seeds/README.md): 2-decimal table values within 0.005, values
// computed here in double within 1e-6. Random shapes against the paper's formula in double,
// within 1e-6 absolute (every entry is in [-1, 1]; float rounding is <= 6e-8).
#include "runtime/kernels/reference/positions.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/kernels/reference/embedding.h"

namespace {

using tern::ref::SinusoidLayout;

// The paper, section 3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same).
double PaperPE(int64_t pos, int64_t dim, int64_t d_model) {
  const int64_t i2 = dim - dim % 2;  // 2i
  const double angle = static_cast<double>(pos) /
                       std::pow(10000.0, static_cast<double>(i2) / static_cast<double>(d_model));
  return dim % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

// fairseq's SinusoidalPositionalEmbedding: half = d/2 frequencies 10000^(-i/(half-1)), all sines
// then all cosines, a zero column appended when d is odd.
double ConcatenatedPE(int64_t pos, int64_t dim, int64_t d_model) {
  const int64_t half = d_model / 2;
  if (dim >= 2 * half) return 0.0;
  const int64_t i = dim < half ? dim : dim - half;
  const double freq =
      half > 1
          ? std::exp(-std::log(10000.0) * static_cast<double>(i) / static_cast<double>(half - 1))
          : 1.0;
  const double angle = static_cast<double>(pos) * freq;
  return dim < half ? std::sin(angle) : std::cos(angle);
}

}  // namespace

TEST_CASE("Positions: the seed's PE table for d_model 4, positions 0..2", "[kernels][positions]") {
  // PE rows as the seed prints them (2 decimals).
  const double printed[3][4] = {
      {0.00, 1.00, 0.00, 1.00}, {0.84, 0.54, 0.01, 1.00}, {0.91, -0.42, 0.02, 1.00}};
  // The same rows written out from the formula: angles pos and pos / 100.
  const double exact[3][4] = {{0.0, 1.0, 0.0, 1.0},
                              {std::sin(1.0), std::cos(1.0), std::sin(0.01), std::cos(0.01)},
                              {std::sin(2.0), std::cos(2.0), std::sin(0.02), std::cos(0.02)}};
  float pe[12];
  tern::ref::SinusoidalPositions(0, 3, 4, SinusoidLayout::kInterleaved, pe);
  for (int p = 0; p < 3; ++p) {
    for (int c = 0; c < 4; ++c) {
      INFO("pos " << p << " dim " << c << " got " << pe[p * 4 + c]);
      REQUIRE(std::fabs(pe[p * 4 + c] - printed[p][c]) <= 0.005);
      REQUIRE(std::fabs(pe[p * 4 + c] - exact[p][c]) <= 1e-6);
    }
  }
}

TEST_CASE("Positions: the seed's embedding + PE for \"I love cats\"", "[kernels][positions]") {
  const float table[12] = {0.10f, 0.20f, 0.30f, 0.40f,   // I
                           0.50f, 0.60f, 0.70f, 0.80f,   // love
                           0.90f, 0.10f, 0.20f, 0.30f};  // cats
  const double printed[3][4] = {
      {0.10, 1.20, 0.30, 1.40}, {1.34, 1.14, 0.71, 1.80}, {1.81, -0.32, 0.22, 1.30}};
  tern::WeightView w;
  w.dtype = tern::DType::kF32;
  w.data = table;
  w.rows = 3;
  w.cols = 4;
  const int32_t ids[3] = {0, 1, 2};
  float x[12];
  tern::ref::Embedding(w, ids, 3, 1.0f, x);
  float pe[12];
  tern::ref::SinusoidalPositions(0, 3, 4, SinusoidLayout::kInterleaved, pe);
  tern::ref::AddRows(x, pe, 3, 4);
  for (int p = 0; p < 3; ++p) {
    for (int c = 0; c < 4; ++c) {
      const double exact = static_cast<double>(table[p * 4 + c]) + PaperPE(p, c, 4);
      INFO("pos " << p << " dim " << c << " got " << x[p * 4 + c]);
      REQUIRE(std::fabs(x[p * 4 + c] - printed[p][c]) <= 0.005);
      REQUIRE(std::fabs(x[p * 4 + c] - exact) <= 1e-6);
    }
  }
}

TEST_CASE("Positions: interleaved layout matches the paper's formula", "[kernels][positions]") {
  for (int64_t d_model : {1, 2, 3, 7, 8, 13, 33, 512}) {
    for (int64_t start : {0, 1, 5, 97, 1000, 4095}) {
      const int64_t count = 7;
      std::vector<float> out(static_cast<size_t>(count * d_model + 1), 99.0f);
      tern::ref::SinusoidalPositions(start, count, d_model, SinusoidLayout::kInterleaved,
                                     out.data());
      for (int64_t t = 0; t < count; ++t) {
        for (int64_t c = 0; c < d_model; ++c) {
          INFO("d_model " << d_model << " pos " << start + t << " dim " << c);
          REQUIRE(std::fabs(out[static_cast<size_t>(t * d_model + c)] -
                            PaperPE(start + t, c, d_model)) <= 1e-6);
        }
      }
      REQUIRE(out.back() == 99.0f);
    }
  }
}

TEST_CASE("Positions: concatenated layout matches fairseq's formula", "[kernels][positions]") {
  for (int64_t d_model : {1, 2, 3, 4, 7, 8, 13, 33, 512}) {
    for (int64_t start : {0, 2, 33, 1023}) {
      const int64_t count = 5;
      std::vector<float> out(static_cast<size_t>(count * d_model + 1), 99.0f);
      // Pre-fill with garbage so the odd-width zero column must be written.
      for (auto& v : out) v = 99.0f;
      tern::ref::SinusoidalPositions(start, count, d_model, SinusoidLayout::kConcatenated,
                                     out.data());
      for (int64_t t = 0; t < count; ++t) {
        for (int64_t c = 0; c < d_model; ++c) {
          INFO("d_model " << d_model << " pos " << start + t << " dim " << c);
          REQUIRE(std::fabs(out[static_cast<size_t>(t * d_model + c)] -
                            ConcatenatedPE(start + t, c, d_model)) <= 1e-6);
        }
      }
      REQUIRE(out.back() == 99.0f);
    }
  }
}

TEST_CASE("Positions: the two layouts differ (layout is honored)", "[kernels][positions]") {
  float a[8];
  float b[8];
  tern::ref::SinusoidalPositions(3, 1, 8, SinusoidLayout::kInterleaved, a);
  tern::ref::SinusoidalPositions(3, 1, 8, SinusoidLayout::kConcatenated, b);
  // Interleaved dim 1 is cos(3); concatenated dim 1 is a sine.
  REQUIRE(std::fabs(a[1] - std::cos(3.0)) <= 1e-6);
  REQUIRE(std::fabs(b[4] - std::cos(3.0)) <= 1e-6);
  REQUIRE(std::fabs(a[1] - b[1]) > 0.1);
}

TEST_CASE("Positions: AddRows adds element-wise and nothing past count rows",
          "[kernels][positions]") {
  std::mt19937 rng(201);
  std::uniform_real_distribution<float> value(-10.0f, 10.0f);
  for (int64_t count : {1, 3, 7}) {
    for (int64_t d : {1, 5, 13}) {
      const size_t n = static_cast<size_t>(count * d);
      std::vector<float> x(n + 3);
      std::vector<float> rows(n + 3);
      for (auto& v : x) v = value(rng);
      for (auto& v : rows) v = value(rng);
      const std::vector<float> before = x;
      tern::ref::AddRows(x.data(), rows.data(), count, d);
      for (size_t i = 0; i < n; ++i) {
        // A float sum of two floats is the double sum rounded once.
        REQUIRE(x[i] == static_cast<float>(static_cast<double>(before[i]) + rows[i]));
      }
      for (size_t i = n; i < n + 3; ++i) REQUIRE(x[i] == before[i]);
    }
  }
}

TEST_CASE("Positions: split-halves layout matches transformers' Marian table",
          "[kernels][positions]") {
  // position_enc[p, j] = p / 10000^(2 (j // 2) / d); sin of the even columns, then cos of the odd.
  for (int64_t d : {4, 6, 16, 33}) {
    const int64_t rows = 50;
    std::vector<float> got(static_cast<size_t>(rows * d));
    tern::ref::SinusoidalPositions(0, rows, d, tern::ref::SinusoidLayout::kSplitHalves, got.data());
    const int64_t sentinel = (d + 1) / 2;
    for (int64_t p = 0; p < rows; ++p) {
      int64_t column = 0;
      for (int64_t j = 0; j < d; j += 2) {
        CHECK(std::fabs(got[p * d + column++] -
                        std::sin(p / std::pow(10000.0, 2.0 * (j / 2) / d))) < 1e-6);
      }
      column = sentinel;
      for (int64_t j = 1; j < d; j += 2) {
        CHECK(std::fabs(got[p * d + column++] -
                        std::cos(p / std::pow(10000.0, 2.0 * (j / 2) / d))) < 1e-6);
      }
    }
  }
}
