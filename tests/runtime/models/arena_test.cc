// The arena: its size is a pure function of model + limits (pinned here), Prepare uses exactly
// that, and nothing is written outside it.
#include <catch2/catch_test_macros.hpp>
#include <vector>

#include "tests/support/tiny_model.h"

namespace tern {
namespace {

TEST_CASE("required_arena_bytes is pinned for the tiny model", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 1);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.max_batch = 2;
  limits.max_source_length = 10;
  limits.max_target_length = 12;
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  REQUIRE(need.ok());
  // Change this number only with a reason: it is what users plan their memory with.
  CHECK(need.value() == size_t{15616});
  // Pure function: a different weight seed changes nothing.
  testing::AlignedBytes other = testing::RandomModelBytes(testing::TinyConfig(), 99);
  CHECK(Session::RequiredArenaBytes(Model::Load(other.data(), other.size()).value(), limits).value() == need.value());
}

TEST_CASE("prepare needs exactly the reported bytes and stays inside them", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 2);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.max_source_length = 9;
  limits.max_target_length = 7;
  const size_t need = Session::RequiredArenaBytes(model.value(), limits).value();
  std::vector<uint8_t> arena(need + 256, 0xAB);
  Session session;
  Status too_small = session.Prepare(model.value(), limits, arena.data() + 128, need - 1);
  CHECK(too_small.code() == StatusCode::kArenaTooSmall);
  REQUIRE(session.Prepare(model.value(), limits, arena.data() + 128, need).ok());
  CHECK(session.arena_used_bytes() == need);
  const int32_t src[] = {5, 6, 7, 8, 9, 10, 11, 12, 2};
  int32_t out[7];
  size_t produced = 0;
  REQUIRE(session.TranslateIds(Span<const int32_t>(src, 9), Span<int32_t>(out, 7), &produced).ok());
  for (size_t i = 0; i < 128; ++i) {
    CHECK(arena[i] == 0xAB);
    CHECK(arena[128 + need + i] == 0xAB);
  }
}

TEST_CASE("the plan shares memory between encoder and decoder phases", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 3);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits small, long_source;
  small.max_source_length = 8;
  small.max_target_length = 8;
  long_source = small;
  long_source.max_source_length = 64;
  const size_t a = Session::RequiredArenaBytes(model.value(), small).value();
  const size_t b = Session::RequiredArenaBytes(model.value(), long_source).value();
  CHECK(b > a);
}

TEST_CASE("invalid limits are rejected", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 4);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.max_source_length = 65;  // model max_positions is 64
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() == StatusCode::kInvalidArgument);
  limits.max_source_length = 8;
  limits.max_batch = 0;
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tern
