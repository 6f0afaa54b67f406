// fp16 K/V caches (Limits::kv_cache = kFloat16): the conversions the loops use are exact (every
// half widens to its value, floats round to nearest even as the reference does), and attention
// over halves gives the bits of attention over floats holding the same values in the reference,
// and agrees with them to float rounding in the vectorizable loops (fixed head sizes and the
// generic loop).
#include "runtime/kernels/vectorized/half.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/core/fp16.h"
#include "runtime/kernels/reference/attention.h"
#include "runtime/kernels/vectorized/attention.h"
#include "tests/support/half_caches.h"

namespace tern {
namespace {

bool SameBits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  return x == y;
}

TEST_CASE("every half widens to its value, in a row and alone", "[vectorized][half]") {
  std::vector<Half> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = Half{static_cast<uint16_t>(i)};
  std::vector<float> row(all.size());
  vec::WidenRow(all.data(), static_cast<int64_t>(all.size()), row.data());
  int wrong = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float want = Fp16ToFp32(static_cast<uint16_t>(i));
    if (std::isnan(want)) {  // NaN stays NaN (payloads are not compared)
      wrong += !std::isnan(row[i]) || !std::isnan(vec::Widen(all[i]));
      continue;
    }
    wrong += !SameBits(row[i], want) || !SameBits(vec::Widen(all[i]), want);
  }
  CHECK(wrong == 0);
}

TEST_CASE("floats round to the reference's halves, cache rows saturating", "[vectorized][half]") {
  // Ties, subnormals, overflow to infinity, and random values of every magnitude.
  std::vector<float> x = {0.0f,     -0.0f,    1.0f,         1.00048828125f, 1.000732421875f,
                          65504.0f, 65520.0f, 1e10f,        -1e10f,         5.9604645e-8f,
                          2.98e-8f, 1e-30f,   INFINITY,     -INFINITY,      3.0517578e-5f,
                          0.1f,     -2.5f,    6.1035156e-5f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, sizeof f);
    if (!std::isnan(f)) x.push_back(f);
  }
  std::vector<Half> got(x.size());
  vec::ToHalf(x.data(), static_cast<int64_t>(x.size()), got.data());
  int wrong = 0, wrong_alone = 0, saturated = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    // A cache row saturates at +-65504 (never infinity); one value alone (vec::Narrow, here in
    // the baseline x86-64 code: libgcc's conversion) rounds exactly as the reference.
    const float in_range = std::fmin(std::fmax(x[i], -65504.0f), 65504.0f);
    wrong += got[i].bits != Fp32ToFp16(in_range);
    wrong_alone += vec::Narrow(x[i]).bits != Fp32ToFp16(x[i]);
    saturated += in_range != x[i];
  }
  CHECK(wrong == 0);
  CHECK(wrong_alone == 0);
  CHECK(saturated > 1000);  // the random floats reach far beyond fp16's range
  const float nan = std::nanf("");
  Half h;
  vec::ToHalf(&nan, 1, &h);
  CHECK(std::isnan(ToFloat(h)));
}

// Attention over K/V rounded to fp16: as halves, and as floats of the same values.
void CheckHalfMatchesFloat(int64_t tq, int64_t tk, int64_t heads, int64_t kv_heads, int64_t d_head,
                           const ref::AttentionMask& mask, uint32_t seed) {
  const int64_t dq = heads * d_head, d_kv = (kv_heads > 0 ? kv_heads : heads) * d_head;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> q(static_cast<size_t>(tq * dq)), k(static_cast<size_t>(tk * d_kv)),
      v(k.size());
  for (auto* t : {&q, &k, &v}) {
    for (auto& x : *t) x = dist(rng);
  }
  // The floats now hold exactly the halves' values.
  const std::vector<Half> kh = testing::RoundToHalves(&k), vh = testing::RoundToHalves(&v);
  std::vector<float> scores(static_cast<size_t>(tq * tk)), want(q.size()), got(q.size());
  ref::MultiHeadAttention(q.data(), dq, k.data(), d_kv, v.data(), d_kv, tq, tk, heads, d_head, mask,
                          scores.data(), want.data(), dq, nullptr, kv_heads);
  ref::MultiHeadAttention(q.data(), dq, kh.data(), d_kv, vh.data(), d_kv, tq, tk, heads, d_head,
                          mask, scores.data(), got.data(), dq, nullptr, kv_heads);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  vec::MultiHeadAttention(q.data(), dq, k.data(), d_kv, v.data(), d_kv, tq, tk, heads, d_head, mask,
                          scores.data(), want.data(), dq, nullptr, kv_heads);
  std::fill(got.begin(), got.end(), 9.0f);
  vec::MultiHeadAttention(q.data(), dq, kh.data(), d_kv, vh.data(), d_kv, tq, tk, heads, d_head,
                          mask, scores.data(), got.data(), dq, nullptr, kv_heads);
  // The loops over halves are compiled apart from the float ones (x86: a copy for x86-64-v3,
  // picked at run time), and a compiler may schedule them differently (the sanitizer build
  // does): equal to float rounding. (Optimized builds give the same bits at the head sizes with
  // loops of their own, 32, 64 and 128; the reference above gives them everywhere.)
  float worst = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) worst = std::fmax(worst, std::fabs(got[i] - want[i]));
  CHECK(worst <= 1e-5f);
}

TEST_CASE("attention over fp16 K/V: the bits of float K/V of the same values (reference)",
          "[vectorized][half][attention]") {
  uint32_t seed = 300;
  for (int64_t d_head : {64, 32, 128, 24, 7}) {  // fixed sizes and the generic loop
    for (int64_t kv_heads : {0, 2}) {
      INFO("d_head " << d_head << " kv_heads " << kv_heads);
      ref::AttentionMask one;  // a decoder step: one query, some keys masked out
      one.key_length = 29;
      CheckHalfMatchesFloat(1, 37, 4, kv_heads, d_head, one, seed++);
      ref::AttentionMask causal;  // several queries, causal after a cache offset
      causal.key_length = 20;
      causal.causal = true;
      causal.causal_offset = 12;
      CheckHalfMatchesFloat(8, 20, 4, kv_heads, d_head, causal, seed++);
    }
  }
}

TEST_CASE("a decoder step over fp16 caches gives the bits of float caches of the same values",
          "[vectorized][half][attention]") {
  // ref::StepAttention: rows at different positions of their caches.
  const int64_t heads = 4, d_head = 16, dq = heads * d_head, capacity = 12, rows = 5;
  const int64_t stride = capacity * dq;
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> q(static_cast<size_t>(rows * dq)), k(static_cast<size_t>(rows * stride)),
      v(k.size());
  for (auto* t : {&q, &k, &v}) {
    for (auto& x : *t) x = dist(rng);
  }
  // The floats now hold exactly the halves' values.
  const std::vector<Half> kh = testing::RoundToHalves(&k), vh = testing::RoundToHalves(&v);
  const int32_t positions[rows] = {0, 3, 11, 7, 20};  // 20: a full ring
  ref::StepKeys keys;
  keys.positions = positions;
  keys.capacity = capacity;
  std::vector<float> scores(static_cast<size_t>(capacity)), want(q.size()), got(q.size(), 9.0f);
  ref::StepAttention(q.data(), dq, k.data(), dq, v.data(), dq, stride, keys, rows, heads, d_head,
                     scores.data(), want.data(), dq);
  ref::StepAttention(q.data(), dq, kh.data(), dq, vh.data(), dq, stride, keys, rows, heads, d_head,
                     scores.data(), got.data(), dq);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

}  // namespace
}  // namespace tern
