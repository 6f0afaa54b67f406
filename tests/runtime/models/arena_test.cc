// The arena: its size is a pure function of model + limits (pinned here for the reference
// kernels; for XNNPACK it also depends on the CPU's packed layouts), Prepare uses exactly that,
// one byte less fails, and nothing is written outside it, on both backends.
#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tests/runtime/models/backend_models.h"
#include "tests/support/tiny_model.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/kernel_check.h"
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
  // 16192 -> 16512: each weight view gained its layout and the pointer to a packed copy's row
  // sums (WeightView::row_sums; null here), 8 bytes on 64-bit targets, none on 32-bit ones
  // (they fill padding there).
  // Weight records hold pointers, so 32-bit targets (armv7) need less: pinned per width.
  const size_t pinned = sizeof(void*) == 8 ? 16512 : 15488;
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
  // and check the buffers above). +320 each: the weight views' packed row sums (see above).
  if (sizeof(void*) == 8) {
    CHECK(need[0] == 26240);
    CHECK(need[1] == 16768);
  }
}

// Four sentences of 6, 3, 5 and 2 tokens (source stride 16), for the token-budget tests.
const int32_t kBudgetIds[] = {5,  9, 4, 11, 7, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                              8,  3, 2, 0,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                              13, 6, 6, 10, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                              7,  2, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
const int32_t kBudgetLengths[] = {6, 3, 5, 2};

// The bytes the plan gives buffer `name` for these limits.
size_t PlannedBytes(const Model& model, const Limits& limits, const char* name) {
  GreedyPlanner plan;
  REQUIRE(EncoderDecoder::PlanArena(model, limits, &plan).ok());
  for (int i = 0; i < plan.count(); ++i)
    if (std::string(plan.name(i)) == name) return plan.size(i);
  FAIL("no " << name << " buffer");
  return 0;
}

// Limits::max_batch_tokens: the encoder's buffers and the cross-attention K/V caches are planned
// for a source-token budget instead of max_batch x max_source_length; a call within it
// translates exactly as an unbudgeted session does (a sentence's output does not depend on its
// batch), a call over it is refused by name, on both backends.
TEST_CASE("a source-token budget shrinks the encoder's buffers and cross caches",
          "[arena][batch_tokens]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 17);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  for (Backend backend : testing::Backends()) {
    INFO((backend == Backend::kXnnpack ? "xnnpack" : "reference"));
    Limits full;
    full.backend = backend;
    full.max_batch = 4;
    full.max_source_length = 16;
    full.max_target_length = 8;
    Limits budget = full;
    budget.max_batch_tokens = 24;  // 4 sentences of at most 6 tokens, or 1 of 16
    const size_t full_bytes = Session::RequiredArenaBytes(model, full).value();
    const size_t budget_bytes = Session::RequiredArenaBytes(model, budget).value();
    CHECK(budget_bytes < full_bytes);
    // A budget at or above max_batch x max_source_length plans the same arena.
    Limits loose = full;
    loose.max_batch_tokens = 64;
    CHECK(Session::RequiredArenaBytes(model, loose).value() == full_bytes);
    // The reference plan's cross K/V caches: decoder layers x {K, V} x tokens x d_kv floats
    // (each buffer planned with the same fixed slack), 24 tokens instead of 4 x 16.
    if (backend == Backend::kReference) {
      auto cross_bytes = [&](const Limits& limits) {
        return PlannedBytes(model, limits, "cross_kv");
      };
      const ModelConfig& c = model.config();
      CHECK(cross_bytes(full) - cross_bytes(budget) ==
            static_cast<size_t>(c.decoder_layers) * 2 * (64 - 24) * static_cast<size_t>(c.d_kv()) *
                sizeof(float));
    }

    auto translate = [&](const Limits& limits, int32_t batch, Status* status) {
      std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
      Session session;
      REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
      std::vector<int32_t> out(static_cast<size_t>(4 * 8), -1), out_lengths(4, -1);
      *status = session.TranslateIds(kBudgetIds, 16, kBudgetLengths, batch, DecodingOptions(),
                                     out.data(), 8, out_lengths.data());
      return std::make_pair(out, out_lengths);
    };
    Status s;
    const auto expected = translate(full, 4, &s);
    REQUIRE(s.ok());
    CHECK(translate(budget, 4, &s) == expected);  // 4 x 6 = 24 tokens: within
    CHECK(s.ok());
    const int32_t long_ids[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 2};
    const int32_t long_lengths[] = {16, 16};
    std::vector<uint8_t> arena(budget_bytes);
    Session session;
    REQUIRE(session.Prepare(model, budget, arena.data(), arena.size()).ok());
    int32_t out[2 * 8], out_lengths[2];
    int32_t pair[2 * 16];
    for (int i = 0; i < 2; ++i) std::memcpy(pair + i * 16, long_ids, sizeof long_ids);
    s = session.TranslateIds(pair, 16, long_lengths, 2, DecodingOptions(), out, 8, out_lengths);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kOutOfRange);
    CHECK(std::string(s.message()).find("max_batch_tokens is 24") != std::string::npos);
    // One sentence of the longest source still fits.
    s = session.TranslateIds(pair, 16, long_lengths, 1, DecodingOptions(), out, 8, out_lengths);
    CHECK(s.ok());
  }
}

// Limits::max_target_tokens: the decoder's self-attention caches are planned for beam x a
// budget of target positions instead of max_batch x beam x max_target_length. A call whose
// sentences x decoder steps (DecoderSteps: max_length, or max_length_ratio's cap) fit
// translates exactly as an unbudgeted session does, greedy and beam, float and fp16 caches, on
// both backends; a call over it is refused by name before decoding.
TEST_CASE("a target-token budget shrinks the self-attention caches", "[arena][target_tokens]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 17);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  // ceil(0.25 x length) + 1 steps: 3, 2, 3, 2; 4 sentences x 3 = 12 positions.
  DecodingOptions short_options;
  short_options.max_length_ratio = 0.25f;
  short_options.max_length_extra = 1;
  for (Backend backend : testing::Backends()) {
    for (CacheType cache : {CacheType::kFloat32, CacheType::kFloat16}) {
      INFO((backend == Backend::kXnnpack ? "xnnpack" : "reference")
           << (cache == CacheType::kFloat16 ? ", fp16 caches" : ", float caches"));
      Limits full;
      full.backend = backend;
      full.kv_cache = cache;
      full.max_batch = 4;
      full.max_source_length = 16;
      full.max_target_length = 32;
      full.beam_size = 2;
      Limits budget = full;
      budget.max_target_tokens = 36;  // 4 sentences of at most 9 steps, or 1 of 32
      const size_t full_bytes = Session::RequiredArenaBytes(model, full).value();
      const size_t budget_bytes = Session::RequiredArenaBytes(model, budget).value();
      CHECK(budget_bytes < full_bytes);
      Limits loose = full;
      loose.max_target_tokens = 128;  // = max_batch x max_target_length: no budget
      CHECK(Session::RequiredArenaBytes(model, loose).value() == full_bytes);
      if (backend == Backend::kReference) {
        // decoder layers x {K, V} x beam x positions x d_kv elements: 2 x 36 instead of 2 x 128.
        auto self_bytes = [&](const Limits& limits) {
          return PlannedBytes(model, limits, "self_kv");
        };
        const ModelConfig& c = model.config();
        const size_t element = cache == CacheType::kFloat16 ? 2 : sizeof(float);
        CHECK(self_bytes(full) - self_bytes(budget) == static_cast<size_t>(c.decoder_layers) * 2 *
                                                           2 * (128 - 36) *
                                                           static_cast<size_t>(c.d_kv()) * element);
      }

      struct Run {
        Status status;
        std::vector<int32_t> out, out_lengths;
      };
      auto translate = [&](Session& session, int32_t batch, DecodingOptions options) {
        Run run;
        run.out.assign(4 * 32, -1);
        run.out_lengths.assign(4, -1);
        run.status = session.TranslateIds(kBudgetIds, 16, kBudgetLengths, batch, options,
                                          run.out.data(), 32, run.out_lengths.data());
        return run;
      };
      std::vector<uint8_t> full_arena(full_bytes), budget_arena(budget_bytes);
      Session unbudgeted, budgeted;
      REQUIRE(unbudgeted.Prepare(model, full, full_arena.data(), full_arena.size()).ok());
      REQUIRE(budgeted.Prepare(model, budget, budget_arena.data(), budget_arena.size()).ok());
      for (int32_t beam : {1, 2}) {
        INFO("beam " << beam);
        DecodingOptions options = short_options;
        options.beam_size = beam;
        const Run expected = translate(unbudgeted, 4, options);
        REQUIRE(expected.status.ok());
        const Run got = translate(budgeted, 4, options);  // 4 x 3 = 12 positions: within
        CHECK(got.status.ok());
        CHECK(got.out == expected.out);
        CHECK(got.out_lengths == expected.out_lengths);
        // max_length 32 for every sentence: 4 x 32 = 128 positions, over the budget.
        DecodingOptions long_options;
        long_options.beam_size = beam;
        const Run over = translate(budgeted, 4, long_options);
        INFO(over.status.message());
        CHECK(over.status.code() == StatusCode::kOutOfRange);
        CHECK(std::string(over.status.message()).find("max_target_tokens is 36") !=
              std::string::npos);
        // One sentence of the whole max_target_length still fits, and the session recovers.
        const Run one_expected = translate(unbudgeted, 1, long_options);
        const Run one = translate(budgeted, 1, long_options);
        CHECK(one.status.ok());
        CHECK(one.out == one_expected.out);
        CHECK(translate(budgeted, 4, options).out == expected.out);
      }
      // The step's K/V rows went through scratch into the budgeted caches: every layer ran on
      // the kernels planned for it, none on a fallback for an unplanned stride.
      CHECK(internal::encoder_decoder(budgeted).kernel_fallback_calls() == 0);
    }
  }
}

// EncoderDecoder::SetTargetLength and the default a caller of DecodeStep gets without it.
TEST_CASE("a target-token budget bounds the decoder steps of a call", "[arena][target_tokens]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 17);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  Limits limits;
  limits.max_batch = 4;
  limits.max_source_length = 8;
  limits.max_target_length = 8;
  limits.max_target_tokens = 12;
  Limits too_small = limits;
  too_small.max_target_tokens = 7;  // below max_target_length: one translation would not fit
  const auto refused = Session::RequiredArenaBytes(model, too_small);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(std::string(refused.status().message()) ==
        "limits.max_target_tokens = 7; 0 (no budget) or at least max_target_length (8): one "
        "longest translation must fit");
  std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
  Session session;
  REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  EncoderDecoder& ed = internal::encoder_decoder(session);
  const int32_t src[] = {5, 9, 2, 0, 8, 3, 2, 0, 6, 6, 2, 0, 7, 4, 4, 2};
  const int32_t lengths[] = {3, 3, 3, 4};
  const int32_t tokens[4] = {1, 1, 1, 1};
  const float* logits = nullptr;

  REQUIRE(ed.Encode(src, 4, lengths, 4).ok());
  CHECK(ed.target_capacity() == 3);  // the budget's share: 12 / 4 sentences
  for (int step = 0; step < 3; ++step) REQUIRE(ed.DecodeStep(tokens, &logits).ok());
  Status s = ed.DecodeStep(tokens, &logits);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(std::string(s.message()) ==
        "decoder reached this call's target length (3 positions: SetTargetLength, or "
        "limits.max_target_tokens 12 over 4 sentences)");
  s = ed.SetTargetLength(2);  // after a step
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(s.message()) == "SetTargetLength must follow Encode");

  REQUIRE(ed.Encode(src, 4, lengths, 4).ok());
  s = ed.SetTargetLength(9);  // > max_target_length
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) == "target length of 9 positions; this session allows 1 to 8");
  s = ed.SetTargetLength(4);  // 16 > 12
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(std::string(s.message()) ==
        "batch of 4 sentences that may take 4 decoder steps: 16 target positions; this "
        "session's limits.max_target_tokens is 12 (lower max_length, set max_length_ratio, or "
        "translate fewer sentences at once)");
  REQUIRE(ed.SetTargetLength(2).ok());
  CHECK(ed.target_capacity() == 2);

  REQUIRE(ed.Encode(src, 4, lengths, 1).ok());  // one sentence: all of max_target_length
  CHECK(ed.target_capacity() == 8);
  for (int step = 0; step < 8; ++step) REQUIRE(ed.DecodeStep(tokens, &logits).ok());
  s = ed.DecodeStep(tokens, &logits);
  CHECK(s.code() == StatusCode::kOutOfRange);
  CHECK(std::string(s.message()).find("max_target_length (8)") != std::string::npos);
}

TEST_CASE("a generator refuses source- and target-token budgets by name", "[arena][batch_tokens]") {
  ModelConfig config = testing::WideConfig();
  config.architecture = Architecture::kDecoderOnly;
  config.encoder_layers = 0;
  config.src_vocab_size = 0;
  config.shared_embeddings = false;
  config.norm_placement = NormPlacement::kPre;
  const testing::AlignedBytes bytes = testing::RandomModelBytes(config, 3);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  Limits limits;
  limits.max_source_length = 8;
  limits.max_target_length = 16;
  limits.max_batch_tokens = 8;
  auto need = Generator::RequiredArenaBytes(model, limits);
  REQUIRE_FALSE(need.ok());
  CHECK(need.status().code() == StatusCode::kInvalidArgument);
  CHECK(std::string(need.status().message()).find("max_batch_tokens") != std::string::npos);
  limits.max_batch_tokens = 0;
  limits.max_target_tokens = 16;
  auto target = Generator::RequiredArenaBytes(model, limits);
  REQUIRE_FALSE(target.ok());
  CHECK(target.status().code() == StatusCode::kInvalidArgument);
  CHECK(std::string(target.status().message()) ==
        "limits.max_target_tokens = 16; a Generator plans its caches by max_batch x "
        "max_target_length and takes 0 only");
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
      // Where XNNPACK's kernel for a path is wrong on this CPU (kernel_check.h), the next path
      // of the chain runs, and the report says why.
      {"f16", false, DType::kF16, 0, 0,
       xnn::PathTrusted(LinearPath::kF16) ? "fully_connected_nc_f16"
                                          : "33 fully_connected_nc_f32_f16; XNNPACK's"},
      {"f16 without f16 arithmetic", false, DType::kF16, 0, PathBit(LinearPath::kF16),
       xnn::PathTrusted(LinearPath::kF16)
           ? "fully_connected_nc_f16 unsupported here -> fully_connected_nc_f32_f16"
           : "33 fully_connected_nc_f32_f16; XNNPACK's"},
      {"int8", false, DType::kI8, 0, 0, "fully_connected_nc_qd8_f32_qc8w"},
      {"int8 without qd8", false, DType::kI8, 0, PathBit(LinearPath::kQd8Qc8w),
       "fully_connected_nc_qd8_f32_qc8w unsupported here -> fully_connected_nc_f32_qc8w"},
      {"int8 without any XNNPACK path", false, DType::kI8, 0,
       PathBit(LinearPath::kQd8Qc8w) | PathBit(LinearPath::kF32Qc8w),
       "fully_connected_nc_qd8_f32_qc8w unsupported here -> vectorized loops"},
      {"int4 per row", false, DType::kI4, 0, 0,
       xnn::PathTrusted(LinearPath::kQd8Qc4w) ? "fully_connected_nc_qd8_f32_qc4w"
                                              : "kernels for them are wrong on this CPU"},
      {"int4 blocks of 8 (vectorized loops)", false, DType::kI4, 8, 0,
       "33 layers on vectorized loops: XNNPACK has no operator"},
      {"int4 blocks of 32", true, DType::kI4, 32, 0,
       xnn::PathTrusted(LinearPath::kQd8Qb4w) ? "fully_connected_nc_qd8_f32_qb4w"
                                              : "kernels for them are wrong on this CPU"},
      {"int8, wide", true, DType::kI8, 0, 0,
       testing::LoopsPreferred() ? "int4 layers on vectorized loops (AVX2 vpmaddubsw"
                                 : "fully_connected_nc_qd8_f32_qc8w"},
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

TEST_CASE("xnnpack with a thread pool: a row of scores per head more, layers cut, reported",
          "[arena][xnnpack]") {
  const testing::XnnpackInt8ForTest xnnpack_int8;  // cut operators are what this is about
  testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 6, DType::kI8, 0);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kXnnpack;
  limits.max_source_length = 11;
  limits.max_target_length = 16;
  Limits threaded = limits;
  threaded.threads = 2;
  // The decoder's attention loops split by head over the pool: each of the 4 heads scores its
  // keys (at most max(11, 16)) in its own row, which the greedy placement may put after a
  // 64-byte alignment gap. And every layer of at least 64 output rows is cut into one operator
  // per thread (xnnpack/linear.h): an operator more per cut layer (its struct; each part packs
  // only its own rows, padded to the kernel's tile of output rows: up to 64 rows of the widest
  // input, 96 bytes, and their sums and scales, on AMX CPUs, whose int8 kernels take 64 rows at a
  // time where a part here has 32). Nothing else grows with the thread count.
  const size_t single = Session::RequiredArenaBytes(model.value(), limits).value();
  const size_t rows = 4 * 16 * sizeof(float);
  const size_t two = Session::RequiredArenaBytes(model.value(), threaded).value();
  std::string report;
  CheckExactArena(model.value(), threaded, Backend::kXnnpack, &report);
  INFO(report);
  CHECK(report.find("xnnpack, 2 threads") == 0);
  int cut = 0;
  const size_t at = report.find(" layers cut into 2 operators each, one per thread");
  REQUIRE(at != std::string::npos);
  const size_t start = report.rfind(' ', at - 1) + 1;
  cut = std::atoi(report.c_str() + start);
  // d_model 64 and d_ff 96: every projection but the 40-token vocabulary's.
  CHECK(cut >= 20);
  {
    // Layers of one shape share their pool governors: 64 x 64, 96 x 64, 64 x 96 (cut) and the
    // output projection 40 x 64 (whole).
    std::vector<uint8_t> arena(two);
    Session session;
    REQUIRE(session.Prepare(model.value(), threaded, arena.data(), arena.size()).ok());
    const auto& ed = tern::internal::encoder_decoder(session);
    CHECK(ed.operator_layers() == cut + 1);
    CHECK(ed.governor_groups() == 4);
    // Q, K and V (and the cross-attention's K and V) run as groups: one conversion of their
    // input and one fork-join (xnn::RunLinears).
    const int32_t src[] = {5, 6, 7, 8, 9, 10, 11, 12, 2};
    int32_t out[16];
    size_t produced = 0;
    REQUIRE(
        session.TranslateIds(Span<const int32_t>(src, 9), Span<int32_t>(out, 16), &produced).ok());
    CHECK(ed.linear_group_calls() > 0);
    CHECK(ed.kernel_fallback_calls() == 0);
  }
  CHECK(two >= single + rows);
  CHECK(two <= single + rows + 64 + static_cast<size_t>(cut) * (4096 + 64 * (96 + 8)));
  // 3 threads: only the 96-row layers have 32 rows a part; the others stay whole operators that
  // XNNPACK tiles over the pool.
  threaded.threads = 3;
  CheckExactArena(model.value(), threaded, Backend::kXnnpack, &report);
  CHECK(report.find("layers cut into 3 operators each") != std::string::npos);
  CHECK(Session::RequiredArenaBytes(model.value(), threaded).value() < two);
  // More threads than a layer is ever cut into: no cut, the arena of one thread and the rows.
  threaded.threads = xnn::kMaxParts + 1;
  const size_t many = Session::RequiredArenaBytes(model.value(), threaded).value();
  CHECK(many >= single + rows);
  CHECK(many <= single + static_cast<size_t>(threaded.threads) * 16 * sizeof(float) + 64);
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
