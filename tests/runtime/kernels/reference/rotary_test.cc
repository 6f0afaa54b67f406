// ref::RotaryTables and ref::ApplyRotary against RoPE as LLaMA / Hugging Face write it, in
// double: q' = q * cos + rotate_half(q) * sin over the first rotary_dim dims of each head, with
// cos/sin of p * base^(-2i/rotary_dim) repeated over both halves; the rest unchanged. Within 1e-5.
#include "runtime/kernels/reference/rotary.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

TEST_CASE("Rotary tables are cos/sin of p * base^(-2i/r)", "[kernels][rotary]") {
  const int64_t rows = 40, r = 6;
  std::vector<float> cos(static_cast<size_t>(rows * r / 2)), sin(cos.size());
  tern::ref::RotaryTables(rows, r, 10000.0f, cos.data(), sin.data());
  for (int64_t p = 0; p < rows; ++p) {
    for (int64_t i = 0; i < r / 2; ++i) {
      const double angle =
          static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / r);
      CHECK(std::fabs(cos[static_cast<size_t>(p * r / 2 + i)] - std::cos(angle)) <= 1e-7);
      CHECK(std::fabs(sin[static_cast<size_t>(p * r / 2 + i)] - std::sin(angle)) <= 1e-7);
    }
  }
}

// rope_scaling: linear divides every frequency; llama3 keeps the high frequencies, divides the
// low ones and blends in between. Base 500000, r = 8 (LLaMA 3's theta), factor 8, low 1, high 8,
// original context 512: wavelengths 6.28 (< 512/8: kept), 167 (between: blended), 4443 and
// 118143 (> 512: divided). Expected values computed separately in Python from the LLaMA 3.1
// formula.
TEST_CASE("Rotary frequencies: linear and llama3 scaling", "[kernels][rotary]") {
  tern::ref::RotaryFrequencies f;
  f.base = 500000.0f;
  const double plain[] = {1.0, 0.03760603093086393, 0.001414213562373095, 5.318295896944988e-05};
  const double llama3[] = {1.0, 0.014405061058513696, 0.00017677669529663688,
                           6.647869871181235e-06};
  for (int64_t i = 0; i < 4; ++i) {
    INFO("i = " << i);
    CHECK(std::fabs(tern::ref::RotaryFrequency(f, i, 8) / plain[i] - 1.0) < 1e-12);
    f.scaling = tern::ref::RotaryScaling::kLinear;
    f.factor = 4.0f;
    CHECK(std::fabs(tern::ref::RotaryFrequency(f, i, 8) / (plain[i] / 4.0) - 1.0) < 1e-12);
    f.scaling = tern::ref::RotaryScaling::kLlama3;
    f.factor = 8.0f;
    f.low_freq_factor = 1.0f;
    f.high_freq_factor = 8.0f;
    f.original_max_positions = 512;
    CHECK(std::fabs(tern::ref::RotaryFrequency(f, i, 8) / llama3[i] - 1.0) < 1e-12);
    f = tern::ref::RotaryFrequencies();
    f.base = 500000.0f;
  }
  // The tables use the scaled frequencies: row p is p * theta_i.
  f.scaling = tern::ref::RotaryScaling::kLinear;
  f.factor = 2.0f;
  std::vector<float> cos(3 * 4), sin(3 * 4);
  tern::ref::RotaryTables(3, 8, f, cos.data(), sin.data());
  CHECK(std::fabs(cos[2 * 4 + 0] - std::cos(2.0 * 1.0 / 2.0)) <= 1e-7);
  CHECK(std::fabs(sin[2 * 4 + 1] - std::sin(2.0 * plain[1] / 2.0)) <= 1e-7);
}

TEST_CASE("Rotary rotates dim i with i + r/2 per head (rotate_half), partial and full",
          "[kernels][rotary]") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t heads = 3, dh = 8, ld = heads * dh + 3, rows = 5, table_rows = 32;
  for (int64_t r : {int64_t{8}, int64_t{6}, int64_t{2}}) {
    std::vector<float> cos(static_cast<size_t>(table_rows * r / 2)), sin(cos.size());
    tern::ref::RotaryTables(table_rows, r, 100.0f, cos.data(), sin.data());
    tern::ref::RotaryTable table{cos.data(), sin.data(), r};
    for (int64_t step : {int64_t{1}, int64_t{0}}) {
      const int64_t first = 7;
      std::vector<float> x(static_cast<size_t>(rows * ld));
      for (auto& e : x) e = dist(rng);
      const std::vector<float> before = x;
      tern::ref::ApplyRotary(table, x.data(), rows, ld, heads, dh, first, step);
      for (int64_t row = 0; row < rows; ++row) {
        const double p = static_cast<double>(first + row * step);
        for (int64_t h = 0; h < heads; ++h) {
          const float* in = before.data() + row * ld + h * dh;
          const float* got = x.data() + row * ld + h * dh;
          for (int64_t c = 0; c < dh; ++c) {
            double want = in[c];
            if (c < r) {
              const int64_t i = c % (r / 2);  // frequency index, repeated over both halves
              const double angle = p / std::pow(100.0, 2.0 * static_cast<double>(i) / r);
              const double rotated = c < r / 2 ? -in[c + r / 2] : in[c - r / 2];  // rotate_half
              want = in[c] * std::cos(angle) + rotated * std::sin(angle);
            }
            INFO("r " << r << " step " << step << " row " << row << " head " << h << " dim " << c);
            CHECK(std::fabs(got[c] - want) <= 1e-5);
          }
        }
        for (int64_t c = heads * dh; c < ld; ++c)
          CHECK(x[row * ld + c] == before[row * ld + c]);  // stride gap
      }
    }
  }
}

TEST_CASE("Rotary: q_m . k_n depends only on m - n", "[kernels][rotary]") {
  const int64_t dh = 8, r = 8;
  std::vector<float> cos(static_cast<size_t>(64 * r / 2)), sin(cos.size());
  tern::ref::RotaryTables(64, r, 10000.0f, cos.data(), sin.data());
  tern::ref::RotaryTable table{cos.data(), sin.data(), r};
  const std::vector<float> q0 = {0.3f, -1.2f, 0.5f, 0.9f, -0.7f, 0.1f, 1.1f, -0.4f};
  const std::vector<float> k0 = {-0.6f, 0.8f, 0.2f, -1.0f, 0.4f, 0.7f, -0.3f, 0.5f};
  auto dot_at = [&](int64_t m, int64_t n) {
    std::vector<float> q = q0, k = k0;
    tern::ref::ApplyRotary(table, q.data(), 1, dh, 1, dh, m, 0);
    tern::ref::ApplyRotary(table, k.data(), 1, dh, 1, dh, n, 0);
    double dot = 0.0;
    for (int64_t c = 0; c < dh; ++c) dot += static_cast<double>(q[c]) * k[c];
    return dot;
  };
  CHECK(std::fabs(dot_at(5, 2) - dot_at(40, 37)) <= 1e-5);
  CHECK(std::fabs(dot_at(0, 9) - dot_at(20, 29)) <= 1e-5);
}

}  // namespace
