// The arena: its size is a pure function of model + limits (pinned here for the reference
// kernels; for XNNPACK it also depends on the CPU's packed layouts), Prepare uses exactly that,
// one byte less fails, and nothing is written outside it, on both backends.
#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tests/runtime/models/backend_models.h"
#include "tests/support/tiny_model.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/linear.h"
#endif

namespace tern {
namespace {

TEST_CASE("required_arena_bytes is pinned for the tiny model", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 1);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kReference;
  limits.max_batch = 2;
  limits.max_source_length = 10;
  limits.max_target_length = 12;
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  REQUIRE(need.ok());
  // Change this number only with a reason: it is what users plan their memory with.
  // 15616 -> 15872: each linear layer's weights record gained the pointer to its XNNPACK
  // operator (null on the reference backend). 15872 -> 16192: each layer's weights record
  // gained Shaw's relative tables (two pointers per attention) and SwiGLU's fc3 (a linear
  // record), null/unused for this model (format 1.2 positions and SwiGLU).
  // Weight records hold pointers, so 32-bit targets (armv7) need less: pinned per width.
  const size_t pinned = sizeof(void*) == 8 ? 16192 : 15488;
  CHECK(need.value() == pinned);
  // Pure function: a different weight seed changes nothing.
  testing::AlignedBytes other = testing::RandomModelBytes(testing::TinyConfig(), 99);
  CHECK(Session::RequiredArenaBytes(Model::Load(other.data(), other.size()).value(), limits)
            .value() == need.value());
}

TEST_CASE("prepare needs exactly the reported bytes and stays inside them", "[arena]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 2);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kReference;
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

// Grouped-query attention: with kv_heads = 1 (multi-query) of 2 heads the K/V caches and the
// encoder's K/V scratch take half the bytes; nothing else changes. Both totals are pinned (the
// reference backend's plan).
TEST_CASE("grouped-query attention shrinks the K/V caches, and only them", "[arena][gqa]") {
  Limits limits;
  limits.backend = Backend::kReference;
  limits.max_batch = 2;
  limits.beam_size = 2;
  limits.max_source_length = 10;
  limits.max_target_length = 12;
  GreedyPlanner plans[2];
  size_t need[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    ModelConfig c = testing::TinyConfig();
    c.kv_heads = i == 0 ? 2 : 1;
    testing::AlignedBytes bytes = testing::RandomModelBytes(c, 7);
    auto model = Model::Load(bytes.data(), bytes.size());
    INFO(model.status().message());
    REQUIRE(model.ok());
    REQUIRE(model.value().config().kv_head_count() == c.kv_heads);
    REQUIRE(EncoderDecoder::PlanArena(model.value(), limits, &plans[i]).ok());
    need[i] = Session::RequiredArenaBytes(model.value(), limits).value();
  }
  REQUIRE(plans[0].count() == plans[1].count());
  // Planner sizes are rounded up to the alignment after the tail padding.
  auto padded = [](size_t bytes) {
    const size_t a = GreedyPlanner::kAlignment;
    return (bytes + GreedyPlanner::kTailPadding + a - 1) / a * a;
  };
  const size_t f = sizeof(float), d = 16, d_kv = 8, rows = 4, src = 20;
  for (int id = 0; id < plans[0].count(); ++id) {
    const std::string name = plans[0].name(id);
    INFO("buffer " << name);
    REQUIRE(name == plans[1].name(id));
    if (name == "self_kv") {  // 2 layers x K and V x rows x 12 positions
      CHECK(plans[0].size(id) == padded(2 * 2 * rows * 12 * d * f));
      CHECK(plans[1].size(id) == padded(2 * 2 * rows * 12 * d_kv * f));
    } else if (name == "cross_kv") {
      CHECK(plans[1].size(id) == padded(2 * 2 * src * d_kv * f));
    } else if (name == "enc_k" || name == "enc_v") {
      CHECK(plans[1].size(id) == padded(src * d_kv * f));
    } else if (name == "beam_scratch") {
      CHECK(plans[1].size(id) == padded(2 * 12 * d_kv * f));
    } else {
      CHECK(plans[0].size(id) == plans[1].size(id));
    }
  }
  CHECK(need[1] < need[0]);
  // Change these only with a reason. 64-bit targets (32-bit ones have smaller weight records
  // and check the buffers above).
  if (sizeof(void*) == 8) {
    CHECK(need[0] == 25920);
    CHECK(need[1] == 16448);
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
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() ==
        StatusCode::kInvalidArgument);
  limits.max_source_length = 8;
  limits.max_batch = 0;
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() ==
        StatusCode::kInvalidArgument);
  limits.max_batch = 1;
  limits.threads = 0;
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() ==
        StatusCode::kInvalidArgument);
  limits.threads = 1;
  limits.max_target_length = 8;
  limits.backend = static_cast<Backend>(7);
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() ==
        StatusCode::kInvalidArgument);
  limits.backend = Backend::kXnnpack;
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  CHECK(Session::RequiredArenaBytes(model.value(), limits).ok());
#else
  CHECK(Session::RequiredArenaBytes(model.value(), limits).status().code() ==
        StatusCode::kNotSupported);
#endif
}

// Prepare with exactly `need` bytes inside guard bytes, one byte less first; translate; check the
// guards. Returns the session's report.
void CheckExactArena(const Model& model, const Limits& limits, Backend expect_backend,
                     std::string* report) {
  auto need_or = Session::RequiredArenaBytes(model, limits);
  INFO(need_or.status().message());
  REQUIRE(need_or.ok());
  const size_t need = need_or.value();
  std::vector<uint8_t> arena(need + 256, 0xAB);
  Session session;
  const Status too_small = session.Prepare(model, limits, arena.data() + 128, need - 1);
  CHECK(too_small.code() == StatusCode::kArenaTooSmall);
  const Status prepared = session.Prepare(model, limits, arena.data() + 128, need);
  INFO(prepared.message());
  REQUIRE(prepared.ok());
  *report = session.backend_report();
  INFO(*report);
  CHECK(session.arena_used_bytes() == need);
  CHECK(session.backend() == expect_backend);
  const int32_t src[] = {5, 6, 7, 8, 9, 10, 11, 12, 2};
  int32_t out[16];
  size_t produced = 0;
  REQUIRE(
      session.TranslateIds(Span<const int32_t>(src, 9), Span<int32_t>(out, 16), &produced).ok());
  CHECK(tern::internal::encoder_decoder(session).kernel_fallback_calls() == 0);
  for (size_t i = 0; i < 128; ++i) {
    CHECK(arena[i] == 0xAB);
    CHECK(arena[128 + need + i] == 0xAB);
  }
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

struct Variant {
  const char* name;
  bool wide;
  DType dtype;
  int64_t group;
  uint32_t unsupported;  // paths switched off, as on a CPU without them
  const char* expect;    // in the report
};

TEST_CASE("xnnpack: prepare uses exactly the reported bytes, every dtype and fallback",
          "[arena][xnnpack]") {
  using xnn::LinearPath;
  using xnn::PathBit;
  const Variant variants[] = {
      {"f32", false, DType::kF32, 0, 0, "fully_connected_nc_f32"},
      {"f16", false, DType::kF16, 0, 0, "fully_connected_nc_f16"},
      {"f16 without f16 arithmetic", false, DType::kF16, 0, PathBit(LinearPath::kF16),
       "fully_connected_nc_f16 unsupported here -> fully_connected_nc_f32_f16"},
      {"int8", false, DType::kI8, 0, 0, "fully_connected_nc_qd8_f32_qc8w"},
      {"int8 without qd8", false, DType::kI8, 0, PathBit(LinearPath::kQd8Qc8w),
       "fully_connected_nc_qd8_f32_qc8w unsupported here -> fully_connected_nc_f32_qc8w"},
      {"int4 per row", false, DType::kI4, 0, 0, "fully_connected_nc_qd8_f32_qc4w"},
      {"int4 blocks of 8 (reference)", false, DType::kI4, 8, 0,
       "33 layers on the reference kernel: XNNPACK has no operator"},
      {"int4 blocks of 32", true, DType::kI4, 32, 0, "fully_connected_nc_qd8_f32_qb4w"},
      {"int8, wide", true, DType::kI8, 0, 0, "fully_connected_nc_qd8_f32_qc8w"},
  };
  for (const Variant& v : variants) {
    INFO(v.name);
    xnn::SetUnsupportedPathsForTesting(v.unsupported);
    const ModelConfig config = v.wide ? testing::WideConfig() : testing::TinyConfig();
    testing::AlignedBytes bytes = testing::ModelBytes(config, 5, v.dtype, v.group);
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(model.ok());
    for (int32_t beam : {1, 3}) {
      Limits limits;
      limits.backend = Backend::kXnnpack;
      limits.max_batch = 2;
      limits.beam_size = beam;
      limits.max_source_length = 11;
      limits.max_target_length = 16;
      std::string report;
      CheckExactArena(model.value(), limits, Backend::kXnnpack, &report);
      INFO(report);
      CHECK(report.find(v.expect) != std::string::npos);
      // A pure function: other weights of the same shapes, same bytes; and the XNNPACK plan
      // holds more than the reference one (operators and packed weights).
      testing::AlignedBytes other = testing::ModelBytes(config, 77, v.dtype, v.group);
      auto other_model = Model::Load(other.data(), other.size());
      REQUIRE(other_model.ok());
      CHECK(Session::RequiredArenaBytes(other_model.value(), limits).value() ==
            Session::RequiredArenaBytes(model.value(), limits).value());
      Limits reference = limits;
      reference.backend = Backend::kReference;
      CHECK(Session::RequiredArenaBytes(model.value(), reference).value() <
            Session::RequiredArenaBytes(model.value(), limits).value());
    }
    xnn::SetUnsupportedPathsForTesting(0);
  }
}

TEST_CASE("xnnpack with a thread pool: same arena bytes, reported", "[arena][xnnpack]") {
  testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 6, DType::kI8, 0);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kXnnpack;
  limits.max_source_length = 11;
  limits.max_target_length = 16;
  Limits threaded = limits;
  threaded.threads = 2;
  CHECK(Session::RequiredArenaBytes(model.value(), threaded).value() ==
        Session::RequiredArenaBytes(model.value(), limits).value());
  std::string report;
  CheckExactArena(model.value(), threaded, Backend::kXnnpack, &report);
  CHECK(report.find("xnnpack, 2 threads") == 0);
}

#endif  // TERN_WITH_XNNPACK

TEST_CASE("the reference backend is there in every build and says so", "[arena]") {
  testing::AlignedBytes bytes = testing::ModelBytes(testing::TinyConfig(), 8, DType::kI8, 0);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kReference;
  limits.max_source_length = 11;
  limits.max_target_length = 16;
  std::string report;
  CheckExactArena(model.value(), limits, Backend::kReference, &report);
  CHECK(report == "reference kernels (requested)");
  limits.backend = Backend::kAuto;
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  CheckExactArena(model.value(), limits, Backend::kXnnpack, &report);
#else
  CheckExactArena(model.value(), limits, Backend::kReference, &report);
  CHECK(report == "reference kernels (this build has no XNNPACK)");
#endif
}

}  // namespace
}  // namespace tern
