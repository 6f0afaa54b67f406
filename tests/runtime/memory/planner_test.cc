// GreedyPlanner: the invariants of any valid plan checked over many random cases (buffers alive
// at the same time never share bytes, every offset aligned, every buffer at least its bytes plus
// the tail padding), sharing when lifetimes are disjoint, determinism, and the error paths.
// CheckedMul / CheckedAdd against the compiler's overflow builtins.
#include "runtime/memory/planner.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using tern::GreedyPlanner;

struct Buffer {
  size_t bytes;
  int first, last;
};

bool LifetimesOverlap(const Buffer& a, const Buffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Plans `buffers` and checks every invariant; returns the planner for further checks.
void PlanAndCheck(const std::vector<Buffer>& buffers, GreedyPlanner& planner) {
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int id = planner.Add("buf", buffers[i].bytes, buffers[i].first, buffers[i].last);
    REQUIRE(id == static_cast<int>(i));
  }
  const tern::Status status = planner.Plan();
  INFO(status.message());
  REQUIRE(status.ok());
  REQUIRE(planner.count() == static_cast<int>(buffers.size()));
  size_t end_max = 0;
  size_t sum = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const int a = static_cast<int>(i);
    INFO("buffer " << i << " bytes " << buffers[i].bytes << " offset " << planner.offset(a)
                   << " size " << planner.size(a));
    REQUIRE(planner.offset(a) % GreedyPlanner::kAlignment == 0);
    REQUIRE(planner.size(a) >= buffers[i].bytes + GreedyPlanner::kTailPadding);
    end_max = std::max(end_max, planner.offset(a) + planner.size(a));
    sum += planner.size(a);
    for (size_t j = 0; j < i; ++j) {
      if (!LifetimesOverlap(buffers[i], buffers[j])) continue;
      const int b = static_cast<int>(j);
      INFO("overlaps in time with buffer " << j << " offset " << planner.offset(b) << " size "
                                           << planner.size(b));
      const bool disjoint = planner.offset(a) + planner.size(a) <= planner.offset(b) ||
                            planner.offset(b) + planner.size(b) <= planner.offset(a);
      REQUIRE(disjoint);
    }
  }
  REQUIRE(planner.total_bytes() == end_max);
  REQUIRE(planner.total_bytes() <= sum);
  // Lower bound: the bytes alive at any one time step.
  for (const Buffer& t : buffers) {
    size_t alive = 0;
    for (size_t j = 0; j < buffers.size(); ++j) {
      const Buffer& b = buffers[j];
      if (b.first <= t.first && t.first <= b.last) alive += planner.size(static_cast<int>(j));
    }
    REQUIRE(planner.total_bytes() >= alive);
  }
}

}  // namespace

TEST_CASE("Planner: randomized plans never overlap live buffers", "[memory][planner]") {
  std::mt19937 rng(1001);
  for (int trial = 0; trial < 600; ++trial) {
    const int count = std::uniform_int_distribution<int>(1, GreedyPlanner::kMaxBuffers)(rng);
    const int steps = std::uniform_int_distribution<int>(1, 40)(rng);
    const size_t max_bytes = trial % 3 == 0 ? 100 : (trial % 3 == 1 ? 5000 : 1 << 20);
    std::vector<Buffer> buffers;
    for (int i = 0; i < count; ++i) {
      Buffer b;
      b.bytes = std::uniform_int_distribution<size_t>(0, max_bytes)(rng);
      if (trial % 5 == 0) b.bytes = 640;  // many equal sizes: ties broken by id
      b.first = std::uniform_int_distribution<int>(0, steps - 1)(rng);
      b.last = std::uniform_int_distribution<int>(b.first, steps - 1)(rng);
      buffers.push_back(b);
    }
    INFO("trial " << trial << " count " << count);
    GreedyPlanner planner;
    PlanAndCheck(buffers, planner);
  }
}

TEST_CASE("Planner: buffers with disjoint lifetimes share space", "[memory][planner]") {
  SECTION("a chain: total is the largest buffer, not the sum") {
    GreedyPlanner planner;
    PlanAndCheck({{1000, 0, 0}, {500, 1, 1}, {1000, 2, 2}, {7, 3, 3}}, planner);
    REQUIRE(planner.total_bytes() == 1024);  // 1000 + 16 rounded up to 64
    for (int i = 0; i < 4; ++i) REQUIRE(planner.offset(i) == 0);
  }
  SECTION("ping-pong: A and C reuse the same bytes, B sits beside them") {
    GreedyPlanner planner;
    PlanAndCheck({{100, 0, 1}, {100, 1, 2}, {100, 2, 3}}, planner);
    REQUIRE(planner.total_bytes() == 256);  // 2 x 128
    REQUIRE(planner.offset(0) == planner.offset(2));
    REQUIRE(planner.offset(1) != planner.offset(0));
  }
  SECTION("a buffer alive across two time-disjoint ones goes above both") {
    GreedyPlanner planner;
    // big0 lives [0,1]; big1 [2,3]; small [1,2] must go above both.
    PlanAndCheck({{4000, 0, 1}, {4000, 2, 3}, {100, 1, 2}}, planner);
    REQUIRE(planner.total_bytes() == 4032 + 128);
    REQUIRE(planner.offset(0) == 0);
    REQUIRE(planner.offset(1) == 0);
    REQUIRE(planner.offset(2) == 4032);
  }
}

TEST_CASE("Planner: the largest buffer is placed first, at offset 0", "[memory][planner]") {
  GreedyPlanner planner;
  PlanAndCheck({{10, 0, 5}, {300, 0, 5}, {9000, 0, 5}, {1, 0, 5}, {64, 0, 5}}, planner);
  REQUIRE(planner.offset(2) == 0);
  REQUIRE(planner.total_bytes() == 64 + 320 + 9024 + 64 + 128);
}

TEST_CASE("Planner: zero-byte buffers still get padding and alignment", "[memory][planner]") {
  GreedyPlanner planner;
  PlanAndCheck({{0, 0, 0}, {0, 0, 0}, {1, 0, 0}}, planner);
  REQUIRE(planner.total_bytes() == 3 * 64);
}

TEST_CASE("Planner: names are kept; an empty plan is empty", "[memory][planner]") {
  GreedyPlanner planner;
  REQUIRE(planner.Plan().ok());
  REQUIRE(planner.total_bytes() == 0);
  REQUIRE(planner.count() == 0);
  const int a = planner.Add("hidden", 10, 0, 1);
  const int b = planner.Add("logits", 10, 1, 2);
  REQUIRE(std::string(planner.name(a)) == "hidden");
  REQUIRE(std::string(planner.name(b)) == "logits");
}

TEST_CASE("Planner: plans are deterministic", "[memory][planner]") {
  std::mt19937 rng(1002);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Buffer> buffers;
    const int count = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int i = 0; i < count; ++i) {
      Buffer b;
      b.bytes = std::uniform_int_distribution<size_t>(0, 3000)(rng);
      b.first = std::uniform_int_distribution<int>(0, 9)(rng);
      b.last = std::uniform_int_distribution<int>(b.first, 9)(rng);
      buffers.push_back(b);
    }
    GreedyPlanner p1;
    GreedyPlanner p2;
    PlanAndCheck(buffers, p1);
    PlanAndCheck(buffers, p2);
    REQUIRE(p1.total_bytes() == p2.total_bytes());
    for (int i = 0; i < count; ++i) REQUIRE(p1.offset(i) == p2.offset(i));
    // Planning the same planner again gives the same answer.
    REQUIRE(p1.Plan().ok());
    REQUIRE(p1.total_bytes() == p2.total_bytes());
    for (int i = 0; i < count; ++i) REQUIRE(p1.offset(i) == p2.offset(i));
  }
}

TEST_CASE("Planner: too many buffers is an error", "[memory][planner]") {
  GreedyPlanner planner;
  for (int i = 0; i < GreedyPlanner::kMaxBuffers; ++i) REQUIRE(planner.Add("b", 8, 0, 0) == i);
  REQUIRE(planner.Plan().ok());
  REQUIRE(planner.Add("one too many", 8, 0, 0) == -1);
  const tern::Status status = planner.Plan();
  REQUIRE_FALSE(status.ok());
  REQUIRE(status.code() == tern::StatusCode::kOutOfRange);
}

TEST_CASE("Planner: a lifetime that ends before it starts is an error", "[memory][planner]") {
  GreedyPlanner planner;
  REQUIRE(planner.Add("ok", 8, 0, 0) == 0);
  REQUIRE(planner.Add("backwards", 8, 3, 2) == -1);
  REQUIRE_FALSE(planner.Plan().ok());
}

TEST_CASE("Planner: a SIZE_MAX buffer is an error", "[memory][planner]") {
  GreedyPlanner planner;
  REQUIRE(planner.Add("huge", SIZE_MAX, 0, 0) == -1);
  REQUIRE_FALSE(planner.Plan().ok());
}

TEST_CASE("Planner: sizes whose padding overflows are an error", "[memory][planner]") {
  // bytes + kTailPadding (16), rounded up to a multiple of 64, exceeds SIZE_MAX for every size
  // above SIZE_MAX - 79. Such a buffer cannot exist; the plan must fail, and the planner must
  // never record a buffer smaller than requested.
  for (size_t bytes :
       {SIZE_MAX - 1, SIZE_MAX - 10, SIZE_MAX - 16, SIZE_MAX - 17, SIZE_MAX - 64, SIZE_MAX - 78}) {
    GreedyPlanner planner;
    const int id = planner.Add("huge", bytes, 0, 0);
    INFO("bytes = SIZE_MAX - " << SIZE_MAX - bytes);
    if (id >= 0) CHECK(planner.size(id) >= bytes);
    CHECK_FALSE(planner.Plan().ok());
  }
}

TEST_CASE("Planner: live buffers whose sum overflows are an error", "[memory][planner]") {
  GreedyPlanner planner;
  REQUIRE(planner.Add("a", SIZE_MAX / 2, 0, 1) >= 0);
  REQUIRE(planner.Add("b", SIZE_MAX / 2, 1, 2) >= 0);
  REQUIRE_FALSE(planner.Plan().ok());
  // Disjoint lifetimes: the same two share bytes and fit.
  GreedyPlanner shared;
  REQUIRE(shared.Add("a", SIZE_MAX / 4, 0, 0) >= 0);
  REQUIRE(shared.Add("b", SIZE_MAX / 4, 1, 1) >= 0);
  REQUIRE(shared.Plan().ok());
  REQUIRE(shared.offset(0) == 0);
  REQUIRE(shared.offset(1) == 0);
}

TEST_CASE("CheckedMul / CheckedAdd: exact or saturated to SIZE_MAX", "[memory][planner]") {
  REQUIRE(tern::CheckedMul(0, SIZE_MAX) == 0);
  REQUIRE(tern::CheckedMul(SIZE_MAX, 0) == 0);
  REQUIRE(tern::CheckedMul(SIZE_MAX, 1) == SIZE_MAX);
  REQUIRE(tern::CheckedMul(SIZE_MAX / 2 + 1, 2) == SIZE_MAX);
  REQUIRE(tern::CheckedMul(SIZE_MAX / 3, 3) == SIZE_MAX / 3 * 3);
  // Half the bits of size_t each (32-bit targets too): the product overflows.
  const size_t half = size_t{1} << (sizeof(size_t) * 4);
  REQUIRE(tern::CheckedMul(half, half, 2) == SIZE_MAX);
  REQUIRE(tern::CheckedMul(size_t{1} << 31, size_t{1} << 31, 0) == 0);
  REQUIRE(tern::CheckedMul(7, 13, 33) == 3003);
  REQUIRE(tern::CheckedAdd(SIZE_MAX - 1, 1) == SIZE_MAX);
  REQUIRE(tern::CheckedAdd(SIZE_MAX - 1, 2) == SIZE_MAX);
  REQUIRE(tern::CheckedAdd(SIZE_MAX, SIZE_MAX) == SIZE_MAX);
  REQUIRE(tern::CheckedAdd(0, 0) == 0);
  std::mt19937_64 rng(1003);
  for (int n = 0; n < 100000; ++n) {
    // Mix of magnitudes so both sides of the overflow boundary are hit.
    const int sa = static_cast<int>(rng() % 64), sb = static_cast<int>(rng() % 64);
    const size_t a = static_cast<size_t>(rng() >> sa);
    const size_t b = static_cast<size_t>(rng() >> sb);
    const size_t c = static_cast<size_t>(rng() >> 60);
    size_t want;
    if (__builtin_mul_overflow(a, b, &want)) want = SIZE_MAX;
    INFO(a << " * " << b);
    REQUIRE(tern::CheckedMul(a, b) == want);
    size_t want3;
    if (__builtin_mul_overflow(want, c, &want3)) want3 = SIZE_MAX;
    REQUIRE(tern::CheckedMul(a, b, c) == want3);
    size_t sum;
    if (__builtin_add_overflow(a, b, &sum)) sum = SIZE_MAX;
    REQUIRE(tern::CheckedAdd(a, b) == sum);
  }
}
