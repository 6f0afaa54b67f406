// ref::ScaledDotProductAttention and ref::MultiHeadAttention against attention computed here in
// double: softmax(Q K^T / sqrt(d_head) + mask) V, with key-padding and causal masks.
// Golden values: the seed's 2x2 example (/work/shared/seeds/README.md), within 1e-5.
// Random cases: |out - ref| <= 1e-5 (inputs in [-1, 1], so outputs are O(1)).
#include "runtime/kernels/reference/attention.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

using tern::ref::AttentionMask;

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// One head in double. Query i sees key j when j < key_length and (not causal or
// j <= i + causal_offset); a query that sees no key gets zeros.
std::vector<double> RefHead(const float* q, int64_t ldq, const float* k, int64_t ldk,
                            const float* v, int64_t ldv, int64_t tq, int64_t tk, int64_t d,
                            const AttentionMask& mask) {
  std::vector<double> out(static_cast<size_t>(tq * d), 0.0);
  for (int64_t i = 0; i < tq; ++i) {
    std::vector<double> s;
    std::vector<int64_t> keys;
    for (int64_t j = 0; j < tk; ++j) {
      if (j >= mask.key_length) continue;
      if (mask.causal && j > i + mask.causal_offset) continue;
      double dot = 0.0;
      for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[i * ldq + c]) * k[j * ldk + c];
      s.push_back(dot / std::sqrt(static_cast<double>(d)));
      keys.push_back(j);
    }
    if (keys.empty()) continue;
    double max = s[0];
    for (double x : s) max = std::fmax(max, x);
    double sum = 0.0;
    for (double& x : s) sum += (x = std::exp(x - max));
    for (size_t n = 0; n < keys.size(); ++n) {
      for (int64_t c = 0; c < d; ++c) {
        out[static_cast<size_t>(i * d + c)] += s[n] / sum * v[keys[n] * ldv + c];
      }
    }
  }
  return out;
}

std::vector<float> Random(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = value(rng);
  return x;
}

// Masks worth testing for tq queries and tk keys.
std::vector<AttentionMask> Masks(int64_t tq, int64_t tk) {
  std::vector<AttentionMask> masks;
  masks.push_back({tk, false, 0});
  if (tk > 2) masks.push_back({tk - 2, false, 0});  // two padded keys
  masks.push_back({1, false, 0});
  masks.push_back({tk, true, 0});
  if (tk >= tq) masks.push_back({tk, true, tk - tq});  // cache of tk - tq keys before the queries
  masks.push_back({tk, true, 2});
  if (tk > 1) masks.push_back({tk - 1, true, 1});  // causal and padded
  return masks;
}

}  // namespace

TEST_CASE("Attention: the seed's 2x2 example", "[kernels][attention]") {
  const float q[4] = {1, 0, 0, 2};
  const float k[4] = {1, 2, 0, 1};
  const float v[4] = {0.5f, 1.5f, 2, 0};
  const float identity[4] = {1, 0, 0, 1};
  const AttentionMask mask{2, false, 0};
  float scores[4];
  float z[4];
  tern::ref::ScaledDotProductAttention(q, 2, k, 2, v, 2, 2, 2, 2, mask, scores, z, 2);
  const double want_z[4] = {0.99536, 1.00464, 0.79336, 1.20664};
  for (int i = 0; i < 4; ++i) {
    INFO("Z[" << i << "] = " << z[i]);
    REQUIRE(std::fabs(z[i] - want_z[i]) <= 1e-5);
  }
  // With V = I, Z is the attention matrix A itself.
  float a[4];
  tern::ref::ScaledDotProductAttention(q, 2, k, 2, identity, 2, 2, 2, 2, mask, scores, a, 2);
  const double want_a[4] = {0.66976, 0.33024, 0.80443, 0.19557};
  for (int i = 0; i < 4; ++i) {
    INFO("A[" << i << "] = " << a[i]);
    REQUIRE(std::fabs(a[i] - want_a[i]) <= 1e-5);
  }
  // The seed's 2-decimal values too.
  REQUIRE(std::fabs(a[0] - 0.67) <= 0.005);
  REQUIRE(std::fabs(a[2] - 0.80) <= 0.005);
}

TEST_CASE("Attention: one head, random shapes, strides and masks", "[kernels][attention]") {
  std::mt19937 rng(701);
  for (int64_t tq : {1, 3, 7}) {
    for (int64_t tk : {1, 5, 13}) {
      for (int64_t d : {1, 3, 8}) {
        for (const AttentionMask& mask : Masks(tq, tk)) {
          const int64_t ldq = d + 3, ldk = d + 1, ldv = d + 5, ldo = d + 2;
          // Padding columns of Q/K/V are NaN: reading them would poison the output.
          std::vector<float> q = Random(rng, static_cast<size_t>(tq * ldq));
          std::vector<float> k = Random(rng, static_cast<size_t>(tk * ldk));
          std::vector<float> v = Random(rng, static_cast<size_t>(tk * ldv));
          for (int64_t i = 0; i < tq; ++i) {
            for (int64_t c = d; c < ldq; ++c) q[static_cast<size_t>(i * ldq + c)] = kNaN;
          }
          for (int64_t j = 0; j < tk; ++j) {
            for (int64_t c = d; c < ldk; ++c) k[static_cast<size_t>(j * ldk + c)] = kNaN;
            for (int64_t c = d; c < ldv; ++c) v[static_cast<size_t>(j * ldv + c)] = kNaN;
          }
          std::vector<float> scores(static_cast<size_t>(tq * tk));
          std::vector<float> out(static_cast<size_t>(tq * ldo), -9.0f);
          tern::ref::ScaledDotProductAttention(q.data(), ldq, k.data(), ldk, v.data(), ldv, tq, tk,
                                               d, mask, scores.data(), out.data(), ldo);
          const auto want = RefHead(q.data(), ldq, k.data(), ldk, v.data(), ldv, tq, tk, d, mask);
          for (int64_t i = 0; i < tq; ++i) {
            for (int64_t c = 0; c < d; ++c) {
              const double got = out[static_cast<size_t>(i * ldo + c)];
              INFO("tq " << tq << " tk " << tk << " d " << d << " key_length " << mask.key_length
                         << " causal " << mask.causal << " offset " << mask.causal_offset << " i "
                         << i << " c " << c << " got " << got);
              REQUIRE(std::fabs(got - want[static_cast<size_t>(i * d + c)]) <= 1e-5);
            }
            for (int64_t c = d; c < ldo; ++c)
              REQUIRE(out[static_cast<size_t>(i * ldo + c)] == -9.0f);
          }
        }
      }
    }
  }
}

TEST_CASE("Attention: causal mask hides exactly the future keys", "[kernels][attention]") {
  // V = identity over 4 keys: output row i is query i's attention row. With equal scores
  // (Q = 0) query i sees keys 0..i+offset uniformly.
  const int64_t tq = 3, tk = 4, d = 4;
  std::vector<float> q(static_cast<size_t>(tq * d), 0.0f);
  std::vector<float> k = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  std::vector<float> v(16, 0.0f);
  for (int j = 0; j < 4; ++j) v[static_cast<size_t>(j * 4 + j)] = 1.0f;
  for (int64_t offset : {0, 1, 3}) {
    std::vector<float> scores(static_cast<size_t>(tq * tk));
    std::vector<float> out(static_cast<size_t>(tq * d));
    tern::ref::ScaledDotProductAttention(q.data(), d, k.data(), d, v.data(), d, tq, tk, d,
                                         {tk, true, offset}, scores.data(), out.data(), d);
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t visible = std::min<int64_t>(tk, i + offset + 1);
      for (int64_t j = 0; j < tk; ++j) {
        INFO("offset " << offset << " query " << i << " key " << j);
        const float want = j < visible ? 1.0f / static_cast<float>(visible) : 0.0f;
        REQUIRE(std::fabs(out[static_cast<size_t>(i * d + j)] - want) <= 1e-7);
      }
    }
  }
}

TEST_CASE("Attention: NaN garbage in padded keys does not leak", "[kernels][attention]") {
  std::mt19937 rng(702);
  for (int64_t key_length : {1, 4, 9}) {
    for (bool causal : {false, true}) {
      const int64_t tq = 5, tk = 13, d = 7;
      std::vector<float> q = Random(rng, static_cast<size_t>(tq * d));
      std::vector<float> k = Random(rng, static_cast<size_t>(tk * d));
      std::vector<float> v = Random(rng, static_cast<size_t>(tk * d));
      // The same keys without padding give the expected values.
      const auto want = RefHead(q.data(), d, k.data(), d, v.data(), d, tq, key_length, d,
                                {key_length, causal, 4});
      for (int64_t j = key_length; j < tk; ++j) {
        for (int64_t c = 0; c < d; ++c) {
          k[static_cast<size_t>(j * d + c)] = kNaN;
          v[static_cast<size_t>(j * d + c)] = kNaN;
        }
      }
      std::vector<float> scores(static_cast<size_t>(tq * tk));
      std::vector<float> out(static_cast<size_t>(tq * d));
      tern::ref::ScaledDotProductAttention(q.data(), d, k.data(), d, v.data(), d, tq, tk, d,
                                           {key_length, causal, 4}, scores.data(), out.data(), d);
      for (size_t n = 0; n < out.size(); ++n) {
        INFO("key_length " << key_length << " causal " << causal << " n " << n);
        REQUIRE(std::isfinite(out[n]));
        REQUIRE(std::fabs(out[n] - want[n]) <= 1e-5);
      }
    }
  }
}

TEST_CASE("Attention: NaN in causally hidden future keys does not leak", "[kernels][attention]") {
  // Keys past the last query's horizon (j > tq - 1 + offset) are hidden from every query.
  std::mt19937 rng(703);
  const int64_t tq = 4, tk = 9, d = 3, offset = 2;  // keys 6..8 are never visible
  std::vector<float> q = Random(rng, static_cast<size_t>(tq * d));
  std::vector<float> k = Random(rng, static_cast<size_t>(tk * d));
  std::vector<float> v = Random(rng, static_cast<size_t>(tk * d));
  const AttentionMask mask{tk, true, offset};
  const auto want = RefHead(q.data(), d, k.data(), d, v.data(), d, tq, tk, d, mask);
  for (int64_t j = tq + offset; j < tk; ++j) {
    for (int64_t c = 0; c < d; ++c) {
      k[static_cast<size_t>(j * d + c)] = kNaN;
      v[static_cast<size_t>(j * d + c)] = kNaN;
    }
  }
  std::vector<float> scores(static_cast<size_t>(tq * tk));
  std::vector<float> out(static_cast<size_t>(tq * d));
  tern::ref::ScaledDotProductAttention(q.data(), d, k.data(), d, v.data(), d, tq, tk, d, mask,
                                       scores.data(), out.data(), d);
  for (size_t n = 0; n < out.size(); ++n) {
    REQUIRE(std::isfinite(out[n]));
    REQUIRE(std::fabs(out[n] - want[n]) <= 1e-5);
  }
}

TEST_CASE("Attention: a query that sees no key outputs zeros", "[kernels][attention]") {
  const int64_t tq = 3, tk = 3, d = 2;
  std::vector<float> q = {1, 2, 3, 4, 5, 6};
  std::vector<float> k = {1, 0, 0, 1, 1, 1};
  std::vector<float> v = {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
  std::vector<float> scores(9);
  std::vector<float> out(6, 5.0f);
  tern::ref::ScaledDotProductAttention(q.data(), d, k.data(), d, v.data(), d, tq, tk, d,
                                       {0, false, 0}, scores.data(), out.data(), d);
  for (float x : out) REQUIRE(x == 0.0f);
}

TEST_CASE("Attention: multi-head with strides equals the per-head loop", "[kernels][attention]") {
  std::mt19937 rng(704);
  for (int64_t heads : {1, 3, 4}) {
    for (int64_t d_head : {1, 5, 8}) {
      for (int64_t tq : {1, 3, 7}) {
        for (int64_t tk : {1, 7, 13}) {
          for (const AttentionMask& mask : Masks(tq, tk)) {
            const int64_t width = heads * d_head;
            // q/k/v are column slices of wider matrices (e.g. a fused QKV buffer).
            const int64_t ldq = width + 7, ldk = 3 * width + 1, ldv = 3 * width + 1;
            const int64_t ldo = width + 3;
            std::vector<float> q = Random(rng, static_cast<size_t>(tq * ldq));
            std::vector<float> kv = Random(rng, static_cast<size_t>(tk * ldk));
            const float* k = kv.data() + width;      // K at columns [width, 2 width)
            const float* v = kv.data() + 2 * width;  // V at columns [2 width, 3 width)
            std::vector<float> scores(static_cast<size_t>(tq * tk));
            std::vector<float> out(static_cast<size_t>(tq * ldo), -3.0f);
            tern::ref::MultiHeadAttention(q.data(), ldq, k, ldk, v, ldv, tq, tk, heads, d_head,
                                          mask, scores.data(), out.data(), ldo);
            for (int64_t h = 0; h < heads; ++h) {
              const int64_t col = h * d_head;
              // Independent: the double reference over this head's columns.
              const auto want =
                  RefHead(q.data() + col, ldq, k + col, ldk, v + col, ldv, tq, tk, d_head, mask);
              // Same kernel on a contiguous copy of the head: must agree bit for bit.
              std::vector<float> qh(static_cast<size_t>(tq * d_head));
              std::vector<float> kh(static_cast<size_t>(tk * d_head));
              std::vector<float> vh(static_cast<size_t>(tk * d_head));
              for (int64_t i = 0; i < tq; ++i) {
                for (int64_t c = 0; c < d_head; ++c) {
                  qh[static_cast<size_t>(i * d_head + c)] =
                      q[static_cast<size_t>(i * ldq + col + c)];
                }
              }
              for (int64_t j = 0; j < tk; ++j) {
                for (int64_t c = 0; c < d_head; ++c) {
                  kh[static_cast<size_t>(j * d_head + c)] = k[j * ldk + col + c];
                  vh[static_cast<size_t>(j * d_head + c)] = v[j * ldv + col + c];
                }
              }
              std::vector<float> single(static_cast<size_t>(tq * d_head));
              tern::ref::ScaledDotProductAttention(qh.data(), d_head, kh.data(), d_head, vh.data(),
                                                   d_head, tq, tk, d_head, mask, scores.data(),
                                                   single.data(), d_head);
              for (int64_t i = 0; i < tq; ++i) {
                for (int64_t c = 0; c < d_head; ++c) {
                  const float got = out[static_cast<size_t>(i * ldo + col + c)];
                  INFO("heads " << heads << " d_head " << d_head << " tq " << tq << " tk " << tk
                                << " h " << h << " i " << i << " c " << c);
                  REQUIRE(std::fabs(got - want[static_cast<size_t>(i * d_head + c)]) <= 1e-5);
                  REQUIRE(got == single[static_cast<size_t>(i * d_head + c)]);
                }
              }
            }
            for (int64_t i = 0; i < tq; ++i) {
              for (int64_t c = width; c < ldo; ++c) {
                REQUIRE(out[static_cast<size_t>(i * ldo + c)] == -3.0f);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("StepAttention: each row over its own sequence's visible keys", "[kernels][attention]") {
  // A decoder step: rows over self-attention caches (one sequence per row, each at its own
  // position, a ring that is full) and over encoder K/V shared by beam hypotheses (sources of
  // different lengths), grouped-query heads included. Each row against the double reference of
  // its keys, and bit for bit against MultiHeadAttention called for that row alone.
  std::mt19937 rng(705);
  const int64_t d_head = 5, capacity = 6;
  for (int64_t kv_heads : {0, 1, 2}) {
    const int64_t heads = 4, dq = heads * d_head;
    const int64_t d_kv = (kv_heads > 0 ? kv_heads : heads) * d_head;
    const int32_t positions[5] = {0, 3, 5, 9, 2};  // 9: a full ring (all capacity keys)
    const int32_t lengths[2] = {6, 2};
    for (int mode = 0; mode < 3; ++mode) {
      tern::ref::StepKeys keys;
      keys.capacity = capacity;
      int64_t rows = 5;
      if (mode == 0) keys.positions = positions;
      if (mode == 1) keys.position = 4;
      if (mode == 2) {  // cross-attention: 2 sentences x 2 hypotheses
        keys.lengths = lengths;
        keys.rows_per_sequence = 2;
        rows = 4;
      }
      const int64_t sequences = rows;  // enough K/V sequences either way
      const int64_t ldq = dq + 1, ldkv = d_kv + 2, ldo = dq + 3, stride = capacity * ldkv + 4;
      std::vector<float> q = Random(rng, static_cast<size_t>(rows * ldq));
      std::vector<float> k = Random(rng, static_cast<size_t>(sequences * stride));
      std::vector<float> v = Random(rng, static_cast<size_t>(sequences * stride));
      std::vector<float> scores(static_cast<size_t>(capacity));
      std::vector<float> out(static_cast<size_t>(rows * ldo), -3.0f);
      tern::ref::StepAttention(q.data(), ldq, k.data(), ldkv, v.data(), ldkv, stride, keys, rows,
                               heads, d_head, scores.data(), out.data(), ldo, kv_heads);
      const int64_t group = tern::ref::HeadGroup(heads, kv_heads);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t s = mode == 2 ? r / 2 : r;
        const int64_t visible = mode == 2   ? lengths[s]
                                : mode == 1 ? 5
                                            : std::min<int64_t>(positions[r] + 1, capacity);
        CHECK(keys.Visible(r) == visible);
        AttentionMask mask;
        mask.key_length = visible;
        std::vector<float> alone(static_cast<size_t>(dq), -5.0f);
        tern::ref::MultiHeadAttention(q.data() + r * ldq, ldq, k.data() + s * stride, ldkv,
                                      v.data() + s * stride, ldkv, 1, keys.Keys(r), heads, d_head,
                                      mask, scores.data(), alone.data(), dq, nullptr, kv_heads);
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t kv = (h / group) * d_head;
          const auto want =
              RefHead(q.data() + r * ldq + h * d_head, ldq, k.data() + s * stride + kv, ldkv,
                      v.data() + s * stride + kv, ldkv, 1, capacity, d_head, mask);
          for (int64_t c = 0; c < d_head; ++c) {
            const float got = out[static_cast<size_t>(r * ldo + h * d_head + c)];
            INFO("kv_heads " << kv_heads << " mode " << mode << " row " << r << " head " << h);
            REQUIRE(std::fabs(got - want[static_cast<size_t>(c)]) <= 1e-5);
            REQUIRE(got == alone[static_cast<size_t>(h * d_head + c)]);
          }
        }
        for (int64_t c = dq; c < ldo; ++c) REQUIRE(out[static_cast<size_t>(r * ldo + c)] == -3.0f);
      }
    }
  }
}
