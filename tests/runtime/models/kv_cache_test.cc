// fp16 K/V caches (Limits::kv_cache = kFloat16) in whole models: a decoder step's logits stay
// within rounding of the float caches' at every step (so the caches are really read back, and
// really rounded), beam search reorders the halves (also per step of a Universal Transformer),
// a sentence translates the same alone and in a batch, the caches' arena bytes halve, and what
// fp16 caches are not for is refused by name. And caches under a target-token budget
// (Limits::max_target_tokens: rows of fewer positions) give the unbudgeted logits to the bit.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "runtime/memory/planner.h"
#include "tests/runtime/models/backend_models.h"
#include "tests/support/generator_fixture.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

const int32_t kIds[3 * 9] = {5,  9, 12, 7,  3, 2, 0,  0, 0,  //
                             14, 6, 8,  11, 9, 4, 17, 2, 0,  //
                             13, 2, 0,  0,  0, 0, 0,  0, 0};
const int32_t kLengths[3] = {6, 8, 2};

Limits LimitsFor(Backend backend, CacheType cache, int32_t beam = 1) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 3;
  limits.beam_size = beam;
  limits.max_source_length = 9;
  limits.max_target_length = 8;
  limits.kv_cache = cache;
  return limits;
}

struct Prepared {
  Prepared(const testing::AlignedBytes& bytes, const Limits& limits) {
    auto loaded = Model::Load(bytes.data(), bytes.size());
    INFO(loaded.status().message());
    REQUIRE(loaded.ok());
    model = loaded.value();
    auto need = Session::RequiredArenaBytes(model, limits);
    INFO(need.status().message());
    REQUIRE(need.ok());
    arena.resize(need.value());
    const Status s = session.Prepare(model, limits, arena.data(), arena.size());
    INFO(s.message());
    REQUIRE(s.ok());
  }
  Model model;
  std::vector<uint8_t> arena;
  Session session;
};

// d_model 64 with 2 heads (d_head 32: the loops' fixed-size path) or 4 (16: the generic one).
ModelConfig Config(int32_t heads) {
  ModelConfig c = testing::WideConfig();
  c.heads = heads;
  return c;
}

struct Variant {
  const char* name;
  ModelConfig config;
  DType dtype;
  int32_t batch;         // sentences encoded (max_batch is 3)
  int32_t beam;          // decoder rows per sentence; > 1: the rows are reordered every step
  int32_t batch_tokens;  // Limits::max_batch_tokens
};

ModelConfig Rotary() {
  ModelConfig c = Config(2);
  c.position = PositionKind::kRotary;
  c.rotary_dim = 16;
  c.norm_placement = NormPlacement::kPre;
  return c;
}

ModelConfig Universal() {
  ModelConfig c = testing::TinyConfig();
  c.architecture = Architecture::kUniversal;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.universal_steps = 3;
  return c;
}

// What the second session of CompareSteps changes: fp16 caches (logits within rounding), or a
// target-token budget of 6 steps per sentence over float caches (logits to the bit).
enum class Second { kFloat16Caches, kTargetBudget };
constexpr int kSteps = 6;

// Both sessions step the same rows with the same tokens (the float caches' choices) and, with
// beams, the same reordering of their caches, so any cache the second session writes, reorders
// or reads wrongly shows up in its logits.
void CompareSteps(Backend backend, const Variant& v, Second second = Second::kFloat16Caches) {
  const testing::AlignedBytes bytes = testing::ModelBytes(v.config, 11, v.dtype, 0);
  Limits limits = LimitsFor(backend, CacheType::kFloat32, v.beam);
  limits.max_batch_tokens = v.batch_tokens;
  Prepared f32(bytes, limits);
  if (second == Second::kFloat16Caches) {
    limits.kv_cache = CacheType::kFloat16;
  } else {
    limits.max_target_tokens = v.batch * kSteps;  // < max_batch x 8: budgeted
  }
  Prepared f16(bytes, limits);
  EncoderDecoder* both[2] = {&internal::encoder_decoder(f32.session),
                             &internal::encoder_decoder(f16.session)};
  for (EncoderDecoder* m : both) {
    REQUIRE(m->Encode(kIds, 9, kLengths, v.batch).ok());
    REQUIRE(m->SetRowsPerSentence(v.beam).ok());
  }
  if (second == Second::kTargetBudget) {
    REQUIRE(both[1]->SetTargetLength(kSteps).ok());
    REQUIRE(both[1]->target_capacity() == kSteps);  // rows of 6 positions, not 8
  }
  const int64_t vocab = v.config.tgt_vocab_size, rows = v.batch * v.beam;
  std::vector<int32_t> tokens(static_cast<size_t>(rows), v.config.decoder_start_id);
  std::vector<int32_t> parents(static_cast<size_t>(rows));
  float worst = 0.0f, largest = 0.0f;
  for (int step = 0; step < kSteps; ++step) {
    const float* logits[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) REQUIRE(both[i]->DecodeStep(tokens.data(), &logits[i]).ok());
    for (int64_t i = 0; i < rows * vocab; ++i) {
      worst = std::max(worst, std::fabs(logits[0][i] - logits[1][i]));
      largest = std::max(largest, std::fabs(logits[0][i]));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = logits[0] + r * vocab;
      // Row r's next token: its own argmax, or (hypothesis j of a beam) the j-th best of its
      // sentence's first row, continuing hypothesis (j + step) mod beam: a real reordering.
      tokens[static_cast<size_t>(r)] =
          static_cast<int32_t>(std::max_element(row, row + vocab) - row) +
          static_cast<int32_t>(r % v.beam) % static_cast<int32_t>(vocab);
      tokens[static_cast<size_t>(r)] %= static_cast<int32_t>(vocab);
      const int64_t first = r - r % v.beam;
      parents[static_cast<size_t>(r)] = static_cast<int32_t>(first + (r + step) % v.beam);
    }
    if (v.beam > 1) {
      for (EncoderDecoder* m : both) REQUIRE(m->ReorderRows(parents.data()).ok());
    }
  }
  INFO("largest difference " << worst << " of logits up to " << largest);
  CHECK(largest > 0.5f);
  if (second == Second::kTargetBudget) {
    // The same K/V rows in other places: the same bits.
    CHECK(worst == 0.0f);
    CHECK(both[1]->kernel_fallback_calls() == 0);
    return;
  }
  // K and V rounded to 11 significant bits move logits of this size by ~1e-3; a cache read,
  // written or reordered wrongly by far more. And they do move: the halves are used.
  CHECK(worst <= 2e-2f);
  CHECK(worst > 0.0f);
}

TEST_CASE("fp16 caches: every step's logits within rounding of float caches", "[kv_cache]") {
  const Variant variants[] = {
      {"d_head 32 (the loops' fixed size), f32", Config(2), DType::kF32, 3, 1, 0},
      {"d_head 16 (the generic loop), int8", Config(4), DType::kI8, 3, 1, 0},
      {"beam 3, reordered every step", Config(2), DType::kI8, 3, 3, 0},
      {"two sentences of three, a token budget", Config(2), DType::kF32, 2, 1, 18},
      {"rotary positions, pre-LN", Rotary(), DType::kF32, 3, 2, 0},
      {"Universal Transformer (a cache per step), beam 2", Universal(), DType::kF32, 3, 2, 0},
  };
  for (Backend backend : testing::Backends()) {
    for (const Variant& v : variants) {
      INFO("backend " << static_cast<int>(backend) << ": " << v.name);
      CompareSteps(backend, v);
    }
  }
}

ModelConfig Relative(RelativeAttention kind) {
  ModelConfig c = testing::TinyConfig();
  c.position = PositionKind::kRelative;
  c.relative_attention = kind;
  c.relative_max_distance = 3;
  return c;
}

// Limits::max_target_tokens: the self-attention caches laid out for 6 positions per row instead
// of max_target_length's 8 (each step's K/V rows through scratch), in every model kind whose
// decoder keeps such caches, including relative positions (float caches only).
TEST_CASE("a target-token budget: every step's logits equal the unbudgeted session's",
          "[kv_cache][target_tokens]") {
  const Variant variants[] = {
      {"d_head 32, f32", Config(2), DType::kF32, 3, 1, 0},
      {"d_head 16, int8", Config(4), DType::kI8, 3, 1, 0},
      {"beam 3, reordered every step", Config(2), DType::kI8, 3, 3, 0},
      {"two sentences of three, also a source budget", Config(2), DType::kF32, 2, 1, 18},
      {"rotary positions, pre-LN", Rotary(), DType::kF32, 3, 2, 0},
      {"Universal Transformer (a cache per step), beam 2", Universal(), DType::kF32, 3, 2, 0},
      {"Shaw relative positions", Relative(RelativeAttention::kShaw), DType::kF32, 3, 1, 0},
  };
  for (Backend backend : testing::Backends()) {
    for (const Variant& v : variants) {
      INFO("backend " << static_cast<int>(backend) << ": " << v.name);
      CompareSteps(backend, v, Second::kTargetBudget);
    }
  }
}

struct Output {
  std::vector<int32_t> ids, lengths;
};

Output Translate(Session& session, int32_t first, int32_t count, int32_t beam) {
  DecodingOptions options;
  options.beam_size = beam;
  Output o{std::vector<int32_t>(static_cast<size_t>(count) * 8),
           std::vector<int32_t>(static_cast<size_t>(count))};
  const Status s = session.TranslateIds(kIds + first * 9, 9, kLengths + first, count, options,
                                        o.ids.data(), 8, o.lengths.data());
  INFO(s.message());
  REQUIRE(s.ok());
  return o;
}

TEST_CASE("fp16 caches: beam search, batches and the Universal Transformer", "[kv_cache]") {
  ModelConfig universal = testing::TinyConfig();
  universal.architecture = Architecture::kUniversal;
  universal.encoder_layers = 1;
  universal.decoder_layers = 1;
  universal.universal_steps = 3;
  for (Backend backend : testing::Backends()) {
    for (bool is_universal : {false, true}) {
      const ModelConfig config = is_universal ? universal : Config(2);
      const testing::AlignedBytes bytes = testing::RandomModelBytes(config, 5);
      for (int32_t beam : {1, 3}) {
        INFO("backend " << static_cast<int>(backend) << ", universal " << is_universal << ", beam "
                        << beam);
        Prepared p(bytes, LimitsFor(backend, CacheType::kFloat16, beam));
        const Output all = Translate(p.session, 0, 3, beam);
        for (int32_t s = 0; s < 3; ++s) {  // each sentence alone: the same ids
          const Output one = Translate(p.session, s, 1, beam);
          REQUIRE(one.lengths[0] == all.lengths[static_cast<size_t>(s)]);
          CHECK(std::equal(one.ids.begin(), one.ids.begin() + one.lengths[0],
                           all.ids.begin() + s * 8));
        }
        bool any = false;  // a random model still says something
        for (int32_t n : all.lengths) any = any || n > 0;
        CHECK(any);
      }
    }
  }
}

TEST_CASE("fp16 caches halve the caches' arena bytes", "[kv_cache][arena]") {
  // The plans list the same buffers: the caches (and beam search's scratch for reordering them)
  // at half the bytes, the step's new K and V rows ([rows, d_kv] floats on their way in) added,
  // every other buffer as it was. The arena shrinks by less than the caches' half when a phase
  // without caches (the encoder's) becomes the larger one.
  const ModelConfig config = Config(4);
  const testing::AlignedBytes bytes = testing::RandomModelBytes(config, 3);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  for (Backend backend : testing::Backends()) {
    INFO("backend " << static_cast<int>(backend));
    Limits limits = LimitsFor(backend, CacheType::kFloat32, 2);
    limits.max_batch = 8;
    limits.max_source_length = 64;
    limits.max_target_length = 64;
    GreedyPlanner plans[2];
    size_t need[2];
    for (int i = 0; i < 2; ++i) {
      limits.kv_cache = i == 0 ? CacheType::kFloat32 : CacheType::kFloat16;
      REQUIRE(EncoderDecoder::PlanArena(model.value(), limits, &plans[i]).ok());
      need[i] = Session::RequiredArenaBytes(model.value(), limits).value();
    }
    const size_t d_kv = 64, rows = 16;
    auto size_of = [](const GreedyPlanner& plan, const std::string& name) -> size_t {
      for (int id = 0; id < plan.count(); ++id) {
        if (name == plan.name(id)) return plan.size(id);
      }
      return 0;
    };
    for (const char* cache : {"cross_kv", "self_kv", "beam_scratch"}) {
      INFO(cache);
      const size_t f32 = size_of(plans[0], cache), f16 = size_of(plans[1], cache);
      REQUIRE(f32 > 0);
      CHECK(f16 >= f32 / 2);
      CHECK(f16 < f32 / 2 + 64);  // planner sizes are rounded up to 64 bytes
    }
    CHECK(size_of(plans[0], "dec_k") == 0);
    CHECK(size_of(plans[1], "dec_k") >= rows * d_kv * sizeof(float));
    CHECK(size_of(plans[1], "dec_v") >= rows * d_kv * sizeof(float));
    for (int id = 0; id < plans[0].count(); ++id) {
      const std::string name = plans[0].name(id);
      if (name == "cross_kv" || name == "self_kv" || name == "beam_scratch") continue;
      INFO("buffer " << name);
      CHECK(size_of(plans[1], name) == plans[0].size(id));
    }
    INFO("arena: float caches " << need[0] << " bytes, fp16 " << need[1]);
    CHECK(need[1] < need[0]);
  }
}

TEST_CASE("fp16 caches are refused where they are not implemented", "[kv_cache]") {
  SECTION("relative positions") {
    ModelConfig c = testing::TinyConfig();
    c.position = PositionKind::kRelative;
    c.relative_attention = RelativeAttention::kShaw;
    c.relative_max_distance = 3;
    const testing::AlignedBytes bytes = testing::RandomModelBytes(c, 2);
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(model.ok());
    Limits limits = LimitsFor(Backend::kReference, CacheType::kFloat16);
    const auto need = Session::RequiredArenaBytes(model.value(), limits);
    REQUIRE_FALSE(need.ok());
    CHECK(need.status().code() == StatusCode::kNotSupported);
    CHECK(std::string(need.status().message()) ==
          "limits.kv_cache = float16 with relative positions; this model's caches are float32 "
          "only");
  }
  SECTION("a value that is no cache type") {
    const testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 2);
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(model.ok());
    Limits limits = LimitsFor(Backend::kReference, static_cast<CacheType>(7));
    const auto need = Session::RequiredArenaBytes(model.value(), limits);
    REQUIRE_FALSE(need.ok());
    CHECK(need.status().code() == StatusCode::kInvalidArgument);
    CHECK(std::string(need.status().message()) ==
          "limits.kv_cache = 7; 0 (float32) or 1 (float16) allowed");
  }
}

// Language models (Generator) with fp16 caches: a prompt's K/V rounded into the cache as it is
// prefilled, each step's through scratch (sliding windows: into the ring).
ModelConfig LanguageModel(bool llama, int32_t window = 0) {
  ModelConfig c = testing::TinyDecoderOnlyConfig(40);
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 64;
  c.max_positions = 48;
  if (llama) {  // rotary, RMSNorm, SwiGLU, untied, 2 K/V heads for 4 query heads
    c.position = PositionKind::kRotary;
    c.rotary_base = 100.0f;
    c.norm_kind = ref::NormKind::kRMSNorm;
    c.layer_norm_eps = 1e-6f;
    c.activation = ref::Activation::kSwiGLU;
    c.tied_output = false;
    c.kv_heads = 2;
    c.sliding_window = window;
  }
  return c;
}

struct LanguageModelVariant {
  const char* name;
  ModelConfig config;
  DType dtype;
};

std::vector<LanguageModelVariant> LanguageModelVariants() {
  return {
      {"GPT-style (learned positions, LayerNorm, GELU), f32", LanguageModel(false), DType::kF32},
      {"LLaMA-style with grouped-query attention, int8", LanguageModel(true), DType::kI8},
      {"sliding window 3 (shorter than the prompt)", LanguageModel(true, 3), DType::kF32}};
}

Limits GeneratorLimits(Backend backend, CacheType cache) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 2;
  limits.max_target_length = 24;
  limits.max_source_length = 12;
  limits.kv_cache = cache;
  return limits;
}

const int32_t kPromptIds[2 * 7] = {3, 17, 5, 22, 9, 30, 1,  //
                                   8, 12, 4, 0,  0, 0,  0};
const int32_t kPromptLengths[2] = {7, 3};

TEST_CASE("fp16 caches in a language model: prefill and steps within rounding of float caches",
          "[kv_cache][decoder_only]") {
  for (Backend backend : testing::Backends()) {
    for (const LanguageModelVariant& v : LanguageModelVariants()) {
      INFO("backend " << static_cast<int>(backend) << ": " << v.name);
      testing::PreparedGenerator f32, f16;
      const size_t need32 =
          testing::PrepareGenerator(&f32, testing::RandomModelBytes(v.config, 7, v.dtype),
                                    GeneratorLimits(backend, CacheType::kFloat32));
      const size_t need16 =
          testing::PrepareGenerator(&f16, testing::RandomModelBytes(v.config, 7, v.dtype),
                                    GeneratorLimits(backend, CacheType::kFloat16));
      // K and V of 2 layers x 2 sequences x 24 positions (a window: 3) x d_kv, in halves.
      const int64_t d_kv = v.config.d_kv();
      const int64_t rows = v.config.sliding_window > 0 ? v.config.sliding_window : 24;
      CHECK(need32 - need16 >= static_cast<size_t>(2 * 2 * 2 * rows * d_kv * 2) - 64);
      CHECK(need32 - need16 <= static_cast<size_t>(2 * 2 * 2 * rows * d_kv * 2) + 64);
      DecoderOnly* both[2] = {&tern::internal::decoder_only(f32.generator),
                              &tern::internal::decoder_only(f16.generator)};
      const int64_t vocab = both[0]->vocab_size();
      float worst = 0.0f, largest = 0.0f;
      std::vector<int32_t> tokens(2);
      for (int step = 0; step < 8; ++step) {
        const float* logits[2] = {nullptr, nullptr};
        for (int i = 0; i < 2; ++i) {
          const Status s = step == 0
                               ? both[i]->Prefill(kPromptIds, 7, kPromptLengths, 2, &logits[i])
                               : both[i]->DecodeStep(tokens.data(), &logits[i]);
          INFO(s.message());
          REQUIRE(s.ok());
        }
        for (int64_t i = 0; i < 2 * vocab; ++i) {
          worst = std::max(worst, std::fabs(logits[0][i] - logits[1][i]));
          largest = std::max(largest, std::fabs(logits[0][i]));
        }
        for (int64_t r = 0; r < 2; ++r) {  // both continue with the float caches' argmax
          const float* row = logits[0] + r * vocab;
          tokens[static_cast<size_t>(r)] =
              static_cast<int32_t>(std::max_element(row, row + vocab) - row);
        }
      }
      INFO("largest difference " << worst << " of logits up to " << largest);
      CHECK(largest > 0.5f);
      CHECK(worst <= 2e-2f);
      CHECK(worst > 0.0f);  // the halves are really what attention reads
    }
  }
}

// A prompt prefilled at once attends over its K/V rounded as the cache holds them, so it equals
// the same tokens stepped one at a time (each step reading the rounded cache) to float rounding;
// attending over the unrounded rows instead would differ by the fp16 rounding (~1e-3).
TEST_CASE("fp16 caches in a language model: a prefilled prompt equals the same tokens step by step",
          "[kv_cache][decoder_only]") {
  for (Backend backend : testing::Backends()) {
    for (const LanguageModelVariant& v : LanguageModelVariants()) {
      INFO("backend " << static_cast<int>(backend) << ": " << v.name);
      testing::PreparedGenerator lm;
      testing::PrepareGenerator(&lm, testing::RandomModelBytes(v.config, 7, v.dtype),
                                GeneratorLimits(backend, CacheType::kFloat16));
      DecoderOnly& m = tern::internal::decoder_only(lm.generator);
      const int32_t n = kPromptLengths[0], one = 1;
      const float* logits = nullptr;
      REQUIRE(m.Prefill(kPromptIds, n, &n, 1, &logits).ok());
      const std::vector<float> whole(logits, logits + m.vocab_size());
      REQUIRE(m.Prefill(kPromptIds, 1, &one, 1, &logits).ok());
      for (int32_t i = 1; i < n; ++i) REQUIRE(m.DecodeStep(&kPromptIds[i], &logits).ok());
      float worst = 0.0f;
      for (int32_t i = 0; i < m.vocab_size(); ++i)
        worst = std::max(worst, std::fabs(whole[static_cast<size_t>(i)] - logits[i]));
      INFO("largest difference " << worst);
      CHECK(worst <= 1e-5f);
    }
  }
}

}  // namespace
}  // namespace tern
