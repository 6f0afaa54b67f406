// The XNNPACK backend's attention, both ways (its own loops, and batch_matrix_multiply +
// softmax for many queries), against the reference on the same inputs: one query (decoding)
// and many (encoding), padding masks, causal masks with a cache offset, fully masked rows, odd
// head sizes, shapes changing between calls.
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <pthreadpool.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/core/fp16.h"
#include "runtime/kernels/reference/attention.h"
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/attention.h"
#include "tests/support/half_caches.h"

namespace tern {
namespace {

// An Attention with its operators and buffers, as Prepare makes it.
class Batched {
 public:
  explicit Batched(const xnn::AttentionShape& shape) {
    REQUIRE(xnn::MeasureAttention(shape, &needs_).ok());
    REQUIRE(needs_.xnn_bytes > 0);
    region_.resize(needs_.xnn_bytes + 64);
    gather_.resize(needs_.gather_bytes / 4 + 16);
    scores_.resize(needs_.scores_bytes / 4 + 16);
    qk_.resize(needs_.qk_workspace_bytes / 4 + 32);
    av_.resize(needs_.av_workspace_bytes / 4 + 32);
    a_.gather = Align(gather_.data());
    a_.gather_bytes = needs_.gather_bytes;
    a_.scores = Align(scores_.data());
    a_.scores_bytes = needs_.scores_bytes;
    a_.qk_workspace = Align(qk_.data());
    a_.qk_workspace_bytes = needs_.qk_workspace_bytes;
    a_.av_workspace = Align(av_.data());
    a_.av_workspace_bytes = needs_.av_workspace_bytes;
    xnn::ArenaScope scope(Align(region_.data()), needs_.xnn_bytes);
    REQUIRE(xnn::CreateAttention(shape, &a_).ok());
    CHECK(scope.used() == needs_.xnn_bytes);
  }
  xnn::Attention& get() { return a_; }
  // The session's pool and probe budget (as Prepare sets them).
  void UsePool(pthreadpool* pool) {
    a_.pool = pool;
    a_.pool_budget = &budget_;
    a_.reshaped[0] = a_.reshaped[1] = -1;  // reshape for it
  }

 private:
  static float* Align(float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
  }
  xnn::AttentionNeeds needs_;
  std::vector<float> region_, gather_, scores_, qk_, av_;
  xnn::Attention a_;
  xnn::PoolBudget budget_;
};

void Check(int64_t tq, int64_t tk, int64_t heads, int64_t d_head, const ref::AttentionMask& mask,
           uint32_t seed, Batched* batched = nullptr, const ref::RelativePositions* rel = nullptr) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t d = heads * d_head;
  const int64_t ldq = d + 3, ldk = d + 1, ldv = d + 2, ldo = d + 5;  // strides wider than rows
  std::vector<float> q(static_cast<size_t>(tq * ldq)), k(static_cast<size_t>(tk * ldk)),
      v(static_cast<size_t>(tk * ldv));
  for (auto* t : {&q, &k, &v}) {
    for (auto& x : *t) x = dist(rng);
  }
  std::vector<float> got(static_cast<size_t>(tq * ldo), 9.0f), want(got);
  std::vector<float> scores(static_cast<size_t>(tq * tk));
  if (batched != nullptr) {
    xnn::Attention& a = batched->get();
    if (rel != nullptr) a.reshaped[0] = a.reshaped[1] = -1;  // so reshaped[0] says whether it ran
    xnn::MultiHeadAttention(a, q.data(), ldq, k.data(), ldk, v.data(), ldv, tq, tk, heads, d_head,
                            mask, scores.data(), got.data(), ldo, rel);
    // Many queries without a causal mask and some key visible: batch_matrix_multiply ran
    // (not with Shaw's terms, which run in the loops).
    const bool shaw = rel != nullptr && rel->shaw_key != nullptr;
    const bool expect_batched = tq > 1 && !mask.causal && mask.key_length > 0 && !shaw;
    CHECK((a.reshaped[0] == tq) == expect_batched);
  } else {
    vec::MultiHeadAttention(q.data(), ldq, k.data(), ldk, v.data(), ldv, tq, tk, heads, d_head,
                            mask, scores.data(), got.data(), ldo, rel);
  }
  ref::MultiHeadAttention(q.data(), ldq, k.data(), ldk, v.data(), ldv, tq, tk, heads, d_head, mask,
                          scores.data(), want.data(), ldo, rel);
  // Outputs are convex combinations of V rows (|v| <= 2); the scores' different summation
  // order moves them by float rounding of the dot products times the softmax's sensitivity.
  float worst = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) worst = std::fmax(worst, std::fabs(got[i] - want[i]));
  INFO("tq=" << tq << " tk=" << tk << " heads=" << heads << " d_head=" << d_head
             << " key_length=" << mask.key_length << " causal=" << mask.causal
             << " offset=" << mask.causal_offset << " worst=" << worst);
  // Batched: XNNPACK's softmax uses its own exp approximation (about 1e-7 relative).
  CHECK(worst <= 2e-5f * std::sqrt(static_cast<float>(d_head)));
}

TEST_CASE("xnnpack attention loops match the reference", "[xnnpack][attention]") {
  uint32_t seed = 1;
  for (int64_t d_head : {1, 5, 16, 32, 64, 67, 128}) {
    for (int64_t heads : {1, 3, 8}) {
      ref::AttentionMask all;
      all.key_length = 9;
      Check(1, 9, heads, d_head, all, seed++);  // one decode step over a cache of 9
      ref::AttentionMask long_cache;
      long_cache.key_length = 40;  // the softmax's 16-lane blocks twice, then a tail of 8
      Check(1, 40, heads, d_head, long_cache, seed++);
      Check(9, 9, heads, d_head, all, seed++);  // encoder self-attention
      ref::AttentionMask padded;
      padded.key_length = 5;  // keys 5.. are padding
      Check(7, 9, heads, d_head, padded, seed++);
      ref::AttentionMask causal;
      causal.key_length = 12;
      causal.causal = true;
      causal.causal_offset = 4;  // 4 cached keys before the first query
      Check(8, 12, heads, d_head, causal, seed++);
      ref::AttentionMask none;  // every key masked: zeros
      none.key_length = 0;
      Check(2, 6, heads, d_head, none, seed++);
    }
  }
}

TEST_CASE("xnnpack batched attention matches the reference, shapes changing",
          "[xnnpack][attention]") {
  uint32_t seed = 1000;
  for (int64_t d_head : {1, 5, 64}) {
    for (int64_t heads : {1, 3, 8}) {
      xnn::AttentionShape shape;
      shape.heads = heads;
      shape.d_head = d_head;
      shape.max_queries = 13;
      shape.max_keys = 13;
      Batched batched(shape);
      for (int64_t t : {9, 13, 2, 13, 1}) {  // reshapes when t changes; 1 query: loops
        ref::AttentionMask all;
        all.key_length = t;
        Check(t, t, heads, d_head, all, seed++, &batched);
        ref::AttentionMask padded;  // keys beyond 5 are padding
        padded.key_length = 5;
        Check(t, t, heads, d_head, padded, seed++, &batched);
      }
      ref::AttentionMask causal;  // causal: loops
      causal.key_length = 12;
      causal.causal = true;
      causal.causal_offset = 4;
      Check(8, 12, heads, d_head, causal, seed++, &batched);
      ref::AttentionMask none;  // nothing visible: zeros, loops
      none.key_length = 0;
      Check(4, 6, heads, d_head, none, seed++, &batched);
    }
  }
}

TEST_CASE(
    "xnnpack attention with relative positions (Shaw, T5 bias) matches the reference, both ways",
    "[xnnpack][attention][relative]") {
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  uint32_t seed = 5000;
  const int64_t max_distance = 3, length = 13;
  for (int64_t d_head : {5, 16}) {
    for (int64_t heads : {1, 3}) {
      std::vector<float> a_k(static_cast<size_t>((2 * max_distance + 1) * d_head)), a_v(a_k.size());
      std::vector<float> bias(static_cast<size_t>(heads * (2 * length - 1)));
      std::vector<float> scratch(static_cast<size_t>(2 * max_distance + 1));
      for (auto* t : {&a_k, &a_v, &bias}) {
        for (auto& x : *t) x = dist(rng);
      }
      xnn::AttentionShape shape;
      shape.heads = heads;
      shape.d_head = d_head;
      shape.max_queries = length;
      shape.max_keys = length;
      Batched batched(shape);
      for (int kind = 0; kind < 3; ++kind) {  // Shaw, T5 bias, both
        ref::RelativePositions rel;
        if (kind != 1) {
          rel.shaw_key = a_k.data();
          rel.shaw_value = a_v.data();
          rel.max_distance = max_distance;
          rel.scratch = scratch.data();
        }
        if (kind != 0) {
          rel.bias = bias.data();
          rel.bias_stride = 2 * length - 1;
          rel.bias_center = length - 1;
        }
        for (int64_t t : {9, 13, 4}) {  // encoder: queries from position 0
          ref::AttentionMask all;
          all.key_length = t;
          Check(t, t, heads, d_head, all, seed++, &batched, &rel);
          Check(t, t, heads, d_head, all, seed++, nullptr, &rel);
          ref::AttentionMask padded;
          padded.key_length = 3;
          Check(t, t, heads, d_head, padded, seed++, &batched, &rel);
        }
        for (int64_t step : {0, 5, 12}) {  // decoder steps: one query at position `step`
          rel.query_position = step;
          ref::AttentionMask cache;
          cache.key_length = step + 1;
          Check(1, step + 1, heads, d_head, cache, seed++, &batched, &rel);
        }
        rel.query_position = 0;
      }
    }
  }
}

// A 2-thread pool, and an Attention without operators (the loops only) on it with its own probe
// budget: `score_rows` rows of loop scores of `loop_keys` (0: one per head).
struct Pool2 {
  pthreadpool* pool = pthreadpool_create(2);
  ~Pool2() { pthreadpool_destroy(pool); }
};

class LoopsOnly {
 public:
  LoopsOnly(pthreadpool* pool, int64_t heads, int64_t d_head, int64_t loop_keys,
            int64_t score_rows = 0)
      : loop_scores_(static_cast<size_t>((score_rows > 0 ? score_rows : heads) * loop_keys)) {
    a_.pool = pool;
    a_.pool_budget = &budget;
    a_.shape.heads = heads;
    a_.shape.d_head = d_head;
    a_.shape.loop_keys = loop_keys;
    a_.loop_scores = loop_scores_.data();
    a_.loop_score_rows = score_rows;
  }
  LoopsOnly(const LoopsOnly&) = delete;
  LoopsOnly& operator=(const LoopsOnly&) = delete;
  xnn::Attention& get() { return a_; }
  xnn::PoolBudget budget;

 private:
  std::vector<float> loop_scores_;
  xnn::Attention a_;
};

TEST_CASE("xnnpack attention loops on a thread pool: head by head, the same bits",
          "[xnnpack][attention][pool]") {
  // Grouped-query heads (9 over 3 K/V heads, SmolLM's) and plain ones, a decode step over a
  // long cache (enough work for the governor to try the pool) and a causal prompt.
  Pool2 p;
  REQUIRE(p.pool != nullptr);
  uint32_t seed = 9000;
  for (int64_t kv_heads : {3, 0}) {
    const int64_t heads = 9, d_head = 64, d = heads * d_head, max_keys = 1500;
    const int64_t d_kv = kv_heads > 0 ? kv_heads * d_head : d;
    LoopsOnly loops(p.pool, heads, d_head, max_keys);
    xnn::Attention& a = loops.get();
    for (int64_t tq : {1, 3}) {
      // A fresh probe budget: on a busy machine the first probe loses, and the shared budget
      // would then defer the next governor's first probe (pool_governor.h).
      loops.budget = xnn::PoolBudget();
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      const int64_t tk = max_keys;
      std::vector<float> q(static_cast<size_t>(tq * d)), k(static_cast<size_t>(tk * d_kv)),
          v(k.size());
      for (auto* t : {&q, &k, &v}) {
        for (auto& x : *t) x = dist(rng);
      }
      ref::AttentionMask mask;
      mask.key_length = tk - 7;
      mask.causal = tq > 1;
      mask.causal_offset = tk - 7 - tq;  // the prompt's last query sees every valid key
      std::vector<float> scores(static_cast<size_t>(tk)), want(static_cast<size_t>(tq * d));
      vec::MultiHeadAttention(q.data(), d, k.data(), d_kv, v.data(), d_kv, tq, tk, heads, d_head,
                              mask, scores.data(), want.data(), d, nullptr, kv_heads);
      {  // A pass without the pool (PassGovernor): the calling thread, the governor untaught.
        loops.budget.pool_off = true;
        std::vector<float> got(want.size(), 9.0f);
        xnn::MultiHeadAttention(a, q.data(), d, k.data(), d_kv, v.data(), d_kv, tq, tk, heads,
                                d_head, mask, scores.data(), got.data(), d, nullptr, kv_heads);
        loops.budget.pool_off = false;
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        CHECK(a.loop_choice.For(tq).single_ns() == 0.0f);
      }
      for (int call = 0; call < 4; ++call) {  // the first call measures one thread, then the pool
        std::vector<float> got(want.size(), 9.0f);
        xnn::MultiHeadAttention(a, q.data(), d, k.data(), d_kv, v.data(), d_kv, tq, tk, heads,
                                d_head, mask, scores.data(), got.data(), d, nullptr, kv_heads);
        INFO("kv_heads " << kv_heads << " tq " << tq << " call " << call);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        // Workers sent to sleep (as after a losing probe) take the next command as before.
        if (call == 1) xnn::ParkWorkers(p.pool);
      }
      // Decode steps and prompts are timed apart; each ran on one thread and on the pool.
      CHECK(a.loop_choice.For(tq).single_ns() > 0.0f);
      CHECK(a.loop_choice.For(tq).pooled_ns() > 0.0f);
    }
  }
}

TEST_CASE("xnnpack batched attention with its heads split over a pool: the same bits",
          "[xnnpack][attention][pool]") {
  // 8 heads in 2 parts, 6 heads in 4 parts of 1, 2, 1 and 2 heads; grouped-query K/V heads and
  // plain ones; a padding mask and a T5 bias (added per part). Each part is run on the calling
  // thread (a pass without the pool), then as pool tasks: the bits of the operators of one part.
  CHECK(xnn::AttentionParts(2, 8) == 2);
  CHECK(xnn::AttentionParts(1, 8) == 1);
  CHECK(xnn::AttentionParts(4, 3) == 1);  // fewer heads than threads: one part on the pool
  CHECK(xnn::AttentionParts(xnn::kMaxAttentionParts + 1, 64) == 1);
  Pool2 p2;
  pthreadpool* p4 = pthreadpool_create(4);
  REQUIRE(p2.pool != nullptr);
  REQUIRE(p4 != nullptr);
  struct Split {
    int64_t heads;
    int parts;
    pthreadpool* pool;
  };
  uint32_t seed = 9500;
  for (const Split& split : {Split{8, 2, p2.pool}, Split{6, 4, p4}}) {
    for (const int64_t kv_heads : {int64_t{0}, split.heads / 2}) {
      for (const bool t5 : {false, true}) {
        const int64_t heads = split.heads, d_head = 64, t = 64, d = heads * d_head;
        const int64_t d_kv = kv_heads > 0 ? kv_heads * d_head : d;
        xnn::AttentionShape shape;
        shape.heads = heads;
        shape.d_head = d_head;
        shape.max_queries = t;
        shape.max_keys = t;
        Batched whole(shape);
        shape.parts = split.parts;
        Batched parts(shape);
        parts.UsePool(split.pool);
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        std::vector<float> q(static_cast<size_t>(t * d)), k(static_cast<size_t>(t * d_kv)),
            v(k.size()), bias(static_cast<size_t>(heads * (2 * t + 1)));
        for (auto* values : {&q, &k, &v, &bias}) {
          for (auto& x : *values) x = dist(rng);
        }
        ref::RelativePositions rel;
        rel.bias = bias.data();
        rel.bias_stride = 2 * t + 1;
        rel.bias_center = t;
        ref::AttentionMask mask;
        mask.key_length = t - 5;
        std::vector<float> scores(static_cast<size_t>(t * t)), want(static_cast<size_t>(t * d));
        xnn::MultiHeadAttention(whole.get(), q.data(), d, k.data(), d_kv, v.data(), d_kv, t, t,
                                heads, d_head, mask, scores.data(), want.data(), d,
                                t5 ? &rel : nullptr, kv_heads);
        REQUIRE(whole.get().reshaped[0] == t);  // batch_matrix_multiply ran
        xnn::Attention& a = parts.get();
        for (int call = 0; call < 5; ++call) {
          // Call 0 without the pool (PassGovernor's pass off); then the governor measures one
          // thread and probes the pool.
          *a.pool_budget = xnn::PoolBudget();  // fresh: a loaded machine's lost probe defers
          a.pool_budget->pool_off = call == 0;
          std::vector<float> got(want.size(), 9.0f);
          xnn::MultiHeadAttention(a, q.data(), d, k.data(), d_kv, v.data(), d_kv, t, t, heads,
                                  d_head, mask, scores.data(), got.data(), d, t5 ? &rel : nullptr,
                                  kv_heads);
          INFO("heads " << heads << " parts " << split.parts << " kv_heads " << kv_heads << " t5 "
                        << t5 << " call " << call);
          CHECK(a.reshaped[0] == t);
          CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        }
        a.pool_budget->pool_off = false;
        CHECK(a.pool_choice.single_ns() > 0.0f);
        CHECK(a.pool_choice.pooled_ns() > 0.0f);
      }
    }
  }
  pthreadpool_destroy(p4);
}

TEST_CASE("xnnpack batched attention refuses a split of its heads it cannot make",
          "[xnnpack][attention]") {
  xnn::AttentionShape shape;
  shape.heads = 2;
  shape.d_head = 8;
  shape.max_queries = shape.max_keys = 4;
  for (int parts : {0, 3, xnn::kMaxAttentionParts + 1}) {
    shape.parts = parts;
    xnn::AttentionNeeds needs;
    const Status s = xnn::MeasureAttention(shape, &needs);
    INFO("parts " << parts);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(std::string(s.message()) == "attention: " + std::to_string(parts) + " parts of 2 heads");
  }
}

TEST_CASE("xnnpack decoder-step attention on a thread pool: rows x heads, the same bits",
          "[xnnpack][attention][pool]") {
  // A batch-16 step over self-attention caches at different positions and over encoder K/V
  // shared by beam hypotheses, grouped-query and plain heads: enough work for the governor to
  // try the pool. Every call (one thread first, then the pool) gives the calling thread's bits;
  // those agree with the reference to rounding.
  Pool2 p;
  REQUIRE(p.pool != nullptr);
  uint32_t seed = 9100;
  for (int64_t kv_heads : {2, 0}) {
    const int64_t heads = 8, d_head = 64, dq = heads * d_head, capacity = 300, rows = 16;
    const int64_t d_kv = kv_heads > 0 ? kv_heads * d_head : dq;
    for (bool cross : {false, true}) {
      // Score rows: one per thread (fewer than heads: as a test of the field).
      LoopsOnly loops(p.pool, heads, d_head, capacity, /*score_rows=*/2);
      xnn::Attention& a = loops.get();
      std::vector<int32_t> positions(static_cast<size_t>(rows)), lengths(rows / 4);
      for (int64_t r = 0; r < rows; ++r) positions[static_cast<size_t>(r)] = (r * 37) % 400;
      for (size_t s = 0; s < lengths.size(); ++s) lengths[s] = static_cast<int32_t>(40 + 70 * s);
      ref::StepKeys keys;
      keys.capacity = capacity;
      if (cross) {
        keys.lengths = lengths.data();
        keys.rows_per_sequence = 4;
      } else {
        keys.positions = positions.data();
      }
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      const int64_t stride = capacity * d_kv;
      std::vector<float> q(static_cast<size_t>(rows * dq)), k(static_cast<size_t>(rows * stride)),
          v(k.size());
      for (auto* t : {&q, &k, &v}) {
        for (auto& x : *t) x = dist(rng);
      }
      std::vector<float> scores(static_cast<size_t>(capacity)), want(q.size()), ref_out(q.size());
      for (int64_t r = 0; r < rows; ++r) {  // the calling thread's loops, row by row
        const int64_t at = keys.Sequence(r) * stride;
        ref::AttentionMask mask;
        mask.key_length = keys.Visible(r);
        vec::MultiHeadAttention(q.data() + r * dq, dq, k.data() + at, d_kv, v.data() + at, d_kv, 1,
                                keys.Keys(r), heads, d_head, mask, scores.data(),
                                want.data() + r * dq, dq, nullptr, kv_heads);
      }
      ref::StepAttention(q.data(), dq, k.data(), d_kv, v.data(), d_kv, stride, keys, rows, heads,
                         d_head, scores.data(), ref_out.data(), dq, kv_heads);
      float worst = 0.0f;
      for (size_t i = 0; i < want.size(); ++i) {
        worst = std::fmax(worst, std::fabs(want[i] - ref_out[i]));
      }
      CHECK(worst <= 2e-5f * 8.0f);
      {  // A pass without the pool (PassGovernor): the calling thread, the governor untaught.
        loops.budget.pool_off = true;
        std::vector<float> got(want.size(), 9.0f);
        xnn::StepAttention(a, q.data(), dq, k.data(), d_kv, v.data(), d_kv, stride, keys, rows,
                           heads, d_head, scores.data(), got.data(), dq, kv_heads);
        loops.budget.pool_off = false;
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        CHECK(a.step_choice.For(rows).single_ns() == 0.0f);
      }
      for (int call = 0; call < 4; ++call) {
        std::vector<float> got(want.size(), 9.0f);
        xnn::StepAttention(a, q.data(), dq, k.data(), d_kv, v.data(), d_kv, stride, keys, rows,
                           heads, d_head, scores.data(), got.data(), dq, kv_heads);
        INFO("kv_heads " << kv_heads << " cross " << cross << " call " << call);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      }
      CHECK(a.step_choice.For(rows).single_ns() > 0.0f);
      CHECK(a.step_choice.For(rows).pooled_ns() > 0.0f);
    }
  }
}

TEST_CASE("xnnpack decoder-step attention over fp16 caches on a thread pool: the same bits",
          "[xnnpack][attention][pool][half]") {
  // As above with the caches in halves (Limits::kv_cache = kFloat16): every call, on the calling
  // thread or the pool, gives the bits of the calling thread's loops over the halves, which agree
  // with the loops over floats of the same values to rounding.
  Pool2 p;
  REQUIRE(p.pool != nullptr);
  const int64_t heads = 8, d_head = 64, dq = heads * d_head, capacity = 200, rows = 16;
  LoopsOnly loops(p.pool, heads, d_head, capacity, /*score_rows=*/2);
  xnn::Attention& a = loops.get();
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) positions[static_cast<size_t>(r)] = (r * 29) % 250;
  ref::StepKeys keys;
  keys.capacity = capacity;
  keys.positions = positions.data();
  std::mt19937 rng(9200);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t stride = capacity * dq;
  std::vector<float> q(static_cast<size_t>(rows * dq)), k(static_cast<size_t>(rows * stride)),
      v(k.size());
  for (auto* t : {&q, &k, &v}) {
    for (auto& x : *t) x = dist(rng);
  }
  // The floats now hold exactly the halves' values.
  const std::vector<Half> kh = testing::RoundToHalves(&k), vh = testing::RoundToHalves(&v);
  std::vector<float> scores(static_cast<size_t>(capacity)), want(q.size()), floats(q.size());
  for (int64_t r = 0; r < rows; ++r) {  // the calling thread's loops, row by row
    const int64_t at = keys.Sequence(r) * stride;
    ref::AttentionMask mask;
    mask.key_length = keys.Visible(r);
    vec::MultiHeadAttention(q.data() + r * dq, dq, kh.data() + at, dq, vh.data() + at, dq, 1,
                            keys.Keys(r), heads, d_head, mask, scores.data(), want.data() + r * dq,
                            dq);
    vec::MultiHeadAttention(q.data() + r * dq, dq, k.data() + at, dq, v.data() + at, dq, 1,
                            keys.Keys(r), heads, d_head, mask, scores.data(),
                            floats.data() + r * dq, dq);
  }
  float worst = 0.0f;
  for (size_t i = 0; i < want.size(); ++i) worst = std::fmax(worst, std::fabs(want[i] - floats[i]));
  CHECK(worst <= 1e-5f);
  for (int call = 0; call < 4; ++call) {
    std::vector<float> got(want.size(), 9.0f);
    xnn::StepAttention(a, q.data(), dq, kh.data(), dq, vh.data(), dq, stride, keys, rows, heads,
                       d_head, scores.data(), got.data(), dq);
    INFO("call " << call);
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
  CHECK(a.step_choice.For(rows).single_ns() > 0.0f);
  CHECK(a.step_choice.For(rows).pooled_ns() > 0.0f);
  // One fork-join of a task per row and head: a cut layer's threshold (attention.h), for every
  // row class, and the same for the loops over many queries.
  for (int64_t m : {1, 4, 16, 64}) {
    CHECK(a.step_choice.For(m).min_pooled_ns() == xnn::PoolGovernor::kMinCutPooledNs);
    CHECK(a.loop_choice.For(m).min_pooled_ns() == xnn::PoolGovernor::kMinCutPooledNs);
  }
}

}  // namespace
}  // namespace tern

#endif  // TERN_WITH_XNNPACK
