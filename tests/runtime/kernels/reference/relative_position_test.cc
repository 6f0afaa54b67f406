// ref::T5RelativePositionBucket against values worked out by hand from T5's definition
// (Raffel et al. 2020; Mesh TensorFlow / Hugging Face _relative_position_bucket), ref::ShawIndex,
// ref::T5BiasByDistance, and attention with relative-position terms (Shaw et al. 2018's a^K /
// a^V, T5's bias) against the papers' formulas in double, within 1e-5.
#include "runtime/kernels/reference/relative_position.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/kernels/reference/attention.h"

namespace {

using tern::ref::RelativePositions;
using tern::ref::T5RelativePositionBucket;

TEST_CASE("T5 buckets, bidirectional, T5's defaults (32 buckets, max distance 128)",
          "[kernels][relative]") {
  // 16 buckets per direction; 8 exact (|d| < 8), then 8 + floor(log(|d|/8) / log(16) * 8), at
  // most 15; keys to the right (d > 0) add 16.
  struct Case {
    int64_t distance;
    int32_t bucket;
  };
  const Case cases[] = {{0, 0},     {-1, 1},    {1, 17},     {-7, 7},
                        {-8, 8},                              // exact; log(1) = 0
                        {-11, 8},   {-12, 9},                 // log(1.5)/log(16)*8 = 1.17
                        {-16, 10},                            // log(2)/log(16)*8 = 2
                        {-32, 12},  {-64, 14},                // 4, 6
                        {-127, 15}, {-128, 15}, {-1000, 15},  // 7.99 -> 15; 8 -> 16, capped at 15
                        {8, 24},    {16, 26},   {128, 31},   {1000, 31}};
  for (const Case& c : cases) {
    INFO("distance " << c.distance);
    CHECK(T5RelativePositionBucket(c.distance, true, 32, 128) == c.bucket);
  }
}

TEST_CASE("T5 buckets, unidirectional (decoder self-attention)", "[kernels][relative]") {
  // 32 buckets, 16 exact, then 16 + floor(log(n/16) / log(8) * 16); keys ahead share bucket 0.
  struct Case {
    int64_t distance;
    int32_t bucket;
  };
  const Case cases[] = {{5, 0},     {0, 0},     {-1, 1},
                        {-15, 15},  {-16, 16},  {-31, 21},  // log(31/16)/log(8)*16 = 5.09
                        {-32, 21},                          // 5.33
                        {-64, 26},                          // 10.67
                        {-127, 31}, {-128, 31}, {-1000, 31}};
  for (const Case& c : cases) {
    INFO("distance " << c.distance);
    CHECK(T5RelativePositionBucket(c.distance, false, 32, 128) == c.bucket);
  }
}

TEST_CASE("T5 buckets of the t5_bias fixture (8 buckets, max distance 6)", "[kernels][relative]") {
  // Bidirectional: 4 per direction, 2 exact, then 2 + floor(log(n/2)/log(3)*2), at most 3.
  const int32_t bi[] = {3, 3, 3, 2, 2, 1, 0, 5, 6, 6, 7, 7, 7};  // distances -6..6
  // Unidirectional: 4 exact, then 4 + floor(log(n/4)/log(1.5)*4), at most 7.
  const int32_t uni[] = {7, 6, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t d = -6; d <= 6; ++d) {
    INFO("distance " << d);
    CHECK(T5RelativePositionBucket(d, true, 8, 6) == bi[d + 6]);
    CHECK(T5RelativePositionBucket(d, false, 8, 6) == uni[d + 6]);
  }
}

TEST_CASE("T5 bias by distance reads the table at each distance's bucket", "[kernels][relative]") {
  const int64_t heads = 3, buckets = 8, length = 5;
  std::vector<float> table(static_cast<size_t>(buckets * heads));
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<float>(i) * 0.5f - 3.0f;
  std::vector<float> out(static_cast<size_t>(heads * (2 * length - 1)));
  for (bool bidirectional : {true, false}) {
    tern::ref::T5BiasByDistance(table.data(), heads, 8, 6, bidirectional, length, out.data());
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t d = -(length - 1); d <= length - 1; ++d) {
        const int32_t b = T5RelativePositionBucket(d, bidirectional, 8, 6);
        CHECK(out[static_cast<size_t>(h * (2 * length - 1) + d + length - 1)] ==
              table[static_cast<size_t>(b * heads + h)]);
      }
    }
  }
}

TEST_CASE("Shaw index clips the distance to [-k, k]", "[kernels][relative]") {
  CHECK(tern::ref::ShawIndex(0, 3) == 3);
  CHECK(tern::ref::ShawIndex(-2, 3) == 1);
  CHECK(tern::ref::ShawIndex(-3, 3) == 0);
  CHECK(tern::ref::ShawIndex(-9, 3) == 0);
  CHECK(tern::ref::ShawIndex(2, 3) == 5);
  CHECK(tern::ref::ShawIndex(9, 3) == 6);
}

// Multi-head attention with relative terms in double, straight from the formulas: query i at
// position q0 + i, key j at j, visible keys j < key_length:
//   e_ij = (q_i . (k_j + aK[clip(j - p_i)])) / sqrt(d_head) + bias_h(j - p_i)
//   z_i = sum_j softmax(e_i)_j (v_j + aV[clip(j - p_i)])
std::vector<double> RelativeAttention(const std::vector<float>& q, const std::vector<float>& k,
                                      const std::vector<float>& v, int64_t tq, int64_t key_length,
                                      int64_t heads, int64_t dh, int64_t q0, const float* a_k,
                                      const float* a_v, int64_t max_distance, const float* bias,
                                      int64_t stride, int64_t center) {
  const int64_t d = heads * dh;
  std::vector<double> out(static_cast<size_t>(tq * d), 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t p = q0 + i;
      std::vector<double> e(static_cast<size_t>(key_length));
      double max = -INFINITY;
      for (int64_t j = 0; j < key_length; ++j) {
        const int64_t r = a_k ? tern::ref::ShawIndex(j - p, max_distance) : 0;
        double dot = 0.0;
        for (int64_t c = 0; c < dh; ++c) {
          const double key =
              static_cast<double>(k[j * d + h * dh + c]) + (a_k ? a_k[r * dh + c] : 0.0);
          dot += static_cast<double>(q[i * d + h * dh + c]) * key;
        }
        e[j] = dot / std::sqrt(static_cast<double>(dh)) +
               (bias ? bias[h * stride + (j - p) + center] : 0.0);
        max = std::fmax(max, e[j]);
      }
      double sum = 0.0;
      for (auto& x : e) sum += (x = std::exp(x - max));
      for (int64_t j = 0; j < key_length; ++j) {
        const int64_t r = a_v ? tern::ref::ShawIndex(j - p, max_distance) : 0;
        for (int64_t c = 0; c < dh; ++c) {
          const double value =
              static_cast<double>(v[j * d + h * dh + c]) + (a_v ? a_v[r * dh + c] : 0.0);
          out[static_cast<size_t>(i * d + h * dh + c)] += e[j] / sum * value;
        }
      }
    }
  }
  return out;
}

TEST_CASE("Attention with Shaw relative keys/values and with a T5 bias matches the formulas",
          "[kernels][relative]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  const int64_t heads = 3, dh = 5, d = heads * dh, max_distance = 2, length = 9;
  auto random = [&](size_t n) {
    std::vector<float> x(n);
    for (auto& e : x) e = dist(rng);
    return x;
  };
  const std::vector<float> a_k = random(static_cast<size_t>((2 * max_distance + 1) * dh));
  const std::vector<float> a_v = random(static_cast<size_t>((2 * max_distance + 1) * dh));
  const int64_t stride = 2 * length - 1, center = length - 1;
  const std::vector<float> bias = random(static_cast<size_t>(heads * stride));
  std::vector<float> scratch(static_cast<size_t>(2 * max_distance + 1));
  struct Shape {
    int64_t tq, tk, key_length, q0;
  };
  // Encoder-like (queries from 0, some keys padded) and decoder steps (one query at q0).
  const Shape shapes[] = {{7, 7, 7, 0}, {7, 7, 5, 0}, {1, 1, 1, 0},
                          {1, 6, 6, 5}, {1, 9, 9, 8}, {3, 9, 9, 6}};
  for (int kind = 0; kind < 3; ++kind) {  // Shaw, T5 bias, both
    for (const Shape& s : shapes) {
      const std::vector<float> q = random(static_cast<size_t>(s.tq * d));
      const std::vector<float> k = random(static_cast<size_t>(s.tk * d));
      const std::vector<float> v = random(static_cast<size_t>(s.tk * d));
      RelativePositions rel;
      rel.query_position = s.q0;
      if (kind != 1) {
        rel.shaw_key = a_k.data();
        rel.shaw_value = a_v.data();
        rel.max_distance = max_distance;
        rel.scratch = scratch.data();
      }
      if (kind != 0) {
        rel.bias = bias.data();
        rel.bias_stride = stride;
        rel.bias_center = center;
      }
      tern::ref::AttentionMask mask;
      mask.key_length = s.key_length;
      std::vector<float> scores(static_cast<size_t>(s.tq * s.tk));
      std::vector<float> got(static_cast<size_t>(s.tq * d));
      tern::ref::MultiHeadAttention(q.data(), d, k.data(), d, v.data(), d, s.tq, s.tk, heads, dh,
                                    mask, scores.data(), got.data(), d, &rel);
      const std::vector<double> want =
          RelativeAttention(q, k, v, s.tq, s.key_length, heads, dh, s.q0, rel.shaw_key,
                            rel.shaw_value, max_distance, rel.bias, stride, center);
      double worst = 0.0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::fmax(worst, std::fabs(got[i] - want[i]));
      INFO("kind " << kind << " tq " << s.tq << " tk " << s.tk << " q0 " << s.q0);
      CHECK(worst <= 1e-5);
    }
  }
}

}  // namespace
