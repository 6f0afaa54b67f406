// The decoder-only model (runtime/models/decoder_only.h) on random weights, on the reference
// kernels and on XNNPACK: a prompt prefilled at once equals the same tokens one step at a time;
// a batch of prompts of different lengths equals each prompt alone; the arena is what
// RequiredArenaBytes says; the config checks name their field; generation stops where it should
// and samples reproducibly. The same for LLaMA-style layers (rotary positions, RMSNorm, SwiGLU)
// and for a model without positions.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tern_generated.h"
#include "tests/support/generator_fixture.h"
#include "tests/support/prepare_status.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

// The tiny decoder-only shape, wider: 4 heads of 8, d_ff 64, 40 tokens, 48 positions.
ModelConfig GptConfig() {
  ModelConfig c = testing::TinyDecoderOnlyConfig(40);
  c.d_model = 32;
  c.heads = 4;
  c.d_ff = 64;
  c.max_positions = 48;
  return c;
}

using testing::Backends;
using Lm = testing::PreparedGenerator;

void Prepare(Lm* lm, const ModelConfig& config, Backend backend, int32_t batch = 1,
             int32_t capacity = 40, int32_t prompt = 16, DType dtype = DType::kF32) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = batch;
  limits.max_target_length = capacity;
  limits.max_source_length = prompt;
  const size_t need =
      testing::PrepareGenerator(lm, testing::RandomModelBytes(config, 7, dtype), limits);
  REQUIRE(lm->generator.backend() == backend);
  CHECK(lm->generator.arena_used_bytes() == need);
}

float MaxAbsDiff(const float* a, const float* b, int64_t n) {
  float worst = 0.0f;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  return worst;
}

const std::vector<int32_t> kPrompt = {3, 17, 5, 22, 9, 30, 1};

// Greedy generation after kPrompt, not stopping at EOS, fills an 8-token output.
void CheckGenerates8(Generator& g) {
  std::vector<int32_t> out(8);
  size_t length = 0;
  GenerationOptions options;
  options.stop_at_eos = false;
  REQUIRE(g.Generate(Span<const int32_t>(kPrompt.data(), kPrompt.size()),
                     Span<int32_t>(out.data(), 8), &length, options)
              .ok());
  CHECK(length == 8);
}

// Logits after prefilling kPrompt, then after one more token.
std::vector<float> PrefillThenStep(Lm* lm) {
  DecoderOnly& m = tern::internal::decoder_only(lm->generator);
  const int32_t n = static_cast<int32_t>(kPrompt.size());
  const float* logits = nullptr;
  REQUIRE(m.Prefill(kPrompt.data(), n, &n, 1, &logits).ok());
  std::vector<float> all(logits, logits + m.vocab_size());
  const int32_t next = 11;
  REQUIRE(m.DecodeStep(&next, &logits).ok());
  all.insert(all.end(), logits, logits + m.vocab_size());
  return all;
}

TEST_CASE("decoder-only: a prefilled prompt equals the same tokens step by step",
          "[decoder_only]") {
  for (Backend backend : Backends()) {
    Lm lm;
    Prepare(&lm, GptConfig(), backend);
    INFO(lm.generator.backend_report());
    DecoderOnly& m = tern::internal::decoder_only(lm.generator);
    const int32_t vocab = m.vocab_size();
    const int32_t n = static_cast<int32_t>(kPrompt.size());
    const float* logits = nullptr;
    REQUIRE(m.Prefill(kPrompt.data(), n, &n, 1, &logits).ok());
    const std::vector<float> whole(logits, logits + vocab);
    CHECK(m.length(0) == n);
    const int32_t one = 1;
    REQUIRE(m.Prefill(kPrompt.data(), 1, &one, 1, &logits).ok());
    for (int32_t i = 1; i < n; ++i)
      REQUIRE(m.DecodeStep(&kPrompt[static_cast<size_t>(i)], &logits).ok());
    CHECK(m.length(0) == n);
    CHECK(MaxAbsDiff(whole.data(), logits, vocab) <= 1e-5f);
  }
}

TEST_CASE("decoder-only: the two backends agree", "[decoder_only]") {
  if (Backends().size() < 2) return;
  std::vector<std::vector<float>> results;
  for (Backend backend : Backends()) {
    Lm lm;
    Prepare(&lm, GptConfig(), backend);
    results.push_back(PrefillThenStep(&lm));
  }
  CHECK(MaxAbsDiff(results[0].data(), results[1].data(), static_cast<int64_t>(results[0].size())) <=
        1e-4f);
}

TEST_CASE("decoder-only: a batch of prompts of different lengths equals each prompt alone",
          "[decoder_only]") {
  const std::vector<std::vector<int32_t>> prompts = {{3, 17, 5, 22, 9}, {8}, {12, 4, 33}};
  for (Backend backend : Backends()) {
    GenerationOptions options;
    options.max_new_tokens = 12;
    options.stop_at_eos = false;
    std::vector<std::vector<int32_t>> alone;
    {
      Lm lm;
      Prepare(&lm, GptConfig(), backend, 1);
      for (const auto& p : prompts) {
        std::vector<int32_t> out(12);
        size_t length = 0;
        const Status s =
            lm.generator.Generate(Span<const int32_t>(p.data(), p.size()),
                                  Span<int32_t>(out.data(), out.size()), &length, options);
        INFO(s.message());
        REQUIRE(s.ok());
        CHECK(length == 12);
        out.resize(length);
        alone.push_back(out);
      }
    }
    Lm lm;
    Prepare(&lm, GptConfig(), backend, 3);
    std::vector<int32_t> ids(3 * 5, -1), lengths = {5, 1, 3};
    for (size_t b = 0; b < 3; ++b)
      std::copy(prompts[b].begin(), prompts[b].end(), ids.begin() + 5 * b);
    std::vector<int32_t> out(3 * 12), out_lengths(3);
    const Status s = lm.generator.Generate(ids.data(), 5, lengths.data(), 3, options, out.data(),
                                           12, out_lengths.data());
    INFO(s.message());
    REQUIRE(s.ok());
    for (size_t b = 0; b < 3; ++b) {
      INFO("prompt " << b);
      REQUIRE(out_lengths[b] == 12);
      CHECK(std::vector<int32_t>(out.begin() + 12 * b, out.begin() + 12 * b + 12) == alone[b]);
    }
  }
}

TEST_CASE("decoder-only: generation stops at EOS, max_new_tokens and the session's capacity",
          "[decoder_only]") {
  Lm lm;
  Prepare(&lm, GptConfig(), Backend::kReference, 1, /*capacity=*/12, /*prompt=*/8);
  GenerationOptions options;
  options.stop_at_eos = false;
  std::vector<int32_t> out(64);
  size_t length = 0;
  // No budget: the output span (64) is more than fits, so the session's 12 positions decide.
  REQUIRE(lm.generator
              .Generate(Span<const int32_t>(kPrompt.data(), kPrompt.size()),
                        Span<int32_t>(out.data(), 64), &length, options)
              .ok());
  CHECK(length == 12 - kPrompt.size());
  options.max_new_tokens = 3;
  REQUIRE(lm.generator
              .Generate(Span<const int32_t>(kPrompt.data(), kPrompt.size()),
                        Span<int32_t>(out.data(), 64), &length, options)
              .ok());
  CHECK(length == 3);
  // EOS: make the model's own first greedy token the EOS id (only the generation's stop rule
  // reads eos_id), and expect an empty continuation.
  const int32_t first = out[0];
  ModelConfig c = GptConfig();
  c.eos_id = first;
  Lm eos;
  Prepare(&eos, c, Backend::kReference, 1, 12, 8);
  GenerationOptions stop;
  REQUIRE(eos.generator
              .Generate(Span<const int32_t>(kPrompt.data(), kPrompt.size()),
                        Span<int32_t>(out.data(), 64), &length, stop)
              .ok());
  CHECK(length == 0);
  // A too-small output stride for the batch call.
  int32_t n = static_cast<int32_t>(kPrompt.size()), produced = 0;
  const Status small = lm.generator.Generate(kPrompt.data(), n, &n, 1, GenerationOptions(),
                                             out.data(), 2, &produced);
  CHECK(small.code() == StatusCode::kInvalidArgument);
  // A prompt longer than the session's prompt limit.
  std::vector<int32_t> longer(9, 1);
  const Status too_long = lm.generator.Generate(Span<const int32_t>(longer.data(), longer.size()),
                                                Span<int32_t>(out.data(), 64), &length, options);
  CHECK(too_long.code() == StatusCode::kOutOfRange);
}

TEST_CASE("decoder-only: sampling is reproducible and per-row", "[decoder_only]") {
  Lm lm;
  Prepare(&lm, GptConfig(), Backend::kReference, 2);
  GenerationOptions options;
  options.max_new_tokens = 16;
  options.stop_at_eos = false;
  options.sampling.temperature = 1.0f;
  options.sampling.top_p = 0.95f;
  options.sampling.seed = 99;
  auto run = [&](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    std::vector<int32_t> ids(2 * 8, 0),
        lengths = {static_cast<int32_t>(a.size()), static_cast<int32_t>(b.size())};
    std::copy(a.begin(), a.end(), ids.begin());
    std::copy(b.begin(), b.end(), ids.begin() + 8);
    std::vector<int32_t> out(2 * 16), out_lengths(2);
    REQUIRE(
        lm.generator
            .Generate(ids.data(), 8, lengths.data(), 2, options, out.data(), 16, out_lengths.data())
            .ok());
    return out;
  };
  const std::vector<int32_t> first = run({3, 4, 5}, {6});
  CHECK(first == run({3, 4, 5}, {6}));
  // Row 1's draws depend on its prompt, the seed and its row only.
  const std::vector<int32_t> other = run({20, 21}, {6});
  CHECK(std::equal(first.begin() + 16, first.end(), other.begin() + 16));
  options.sampling.seed = 100;
  CHECK(first != run({3, 4, 5}, {6}));
  // Greedy (temperature 0) ignores the seed.
  options.sampling = SamplingOptions();
  options.sampling.seed = 1;
  const std::vector<int32_t> g1 = run({3, 4, 5}, {6});
  options.sampling.seed = 2;
  CHECK(g1 == run({3, 4, 5}, {6}));
}

TEST_CASE("decoder-only: arena size, sinusoidal positions, untied output, int8", "[decoder_only]") {
  for (Backend backend : Backends()) {
    ModelConfig c = GptConfig();
    c.position = PositionKind::kSinusoidal;
    c.tied_output = false;
    c.embedding_scale = 2.0f;
    Lm lm;
    Prepare(&lm, c, backend, 2, 40, 16, DType::kI8);
    CheckGenerates8(lm.generator);
    // One byte short of the requirement is refused.
    Generator small;
    Limits limits = tern::internal::decoder_only(lm.generator).limits();
    const Status s = small.Prepare(lm.model, limits, lm.arena.data(), lm.arena.size() - 1);
    CHECK(s.code() == StatusCode::kArenaTooSmall);
  }
}

TEST_CASE(
    "decoder-only configs have no encoder fields; sessions and generators refuse the wrong model",
    "[decoder_only]") {
  auto load_error = [](const ModelConfig& c) {
    convert::TernContents contents = testing::RandomContents(GptConfig(), 1);
    contents.config = c;
    // Load, then the architecture check of Generator::Prepare (tests/support/prepare_status.h).
    const Status s = testing::PrepareStatus(convert::SerializeModel(contents));
    return s.ok() ? std::string() : std::string(s.message());
  };
  ModelConfig c = GptConfig();
  c.src_vocab_size = 40;
  CHECK(load_error(c).find("src_vocab_size = 40: a decoder-only model has no source vocabulary") !=
        std::string::npos);
  c = GptConfig();
  c.encoder_layers = 2;
  CHECK(load_error(c).find("encoder_layers = 2: a decoder-only model has no encoder") !=
        std::string::npos);
  c = GptConfig();
  c.eos_id = 40;
  CHECK(load_error(c).find("eos_id = 40") != std::string::npos);
  c = GptConfig();
  c.position = PositionKind::kRelative;
  CHECK(load_error(c) ==
        "config.position = relative: decoder-only models support learned, sinusoidal, rotary or no "
        "positions, not "
        "relative ones (yet)");
  c = GptConfig();
  c.layernorm_embedding = true;
  CHECK(load_error(c) ==
        "config.layernorm_embedding: decoder-only models do not support a LayerNorm on the "
        "embeddings (yet)");
  CHECK(load_error(GptConfig()).empty());

  testing::AlignedBytes lm_bytes = testing::RandomModelBytes(GptConfig(), 1);
  auto lm = Model::Load(lm_bytes.data(), lm_bytes.size());
  REQUIRE(lm.ok());
  Limits limits;
  auto session_need = Session::RequiredArenaBytes(lm.value(), limits);
  REQUIRE(!session_need.ok());
  CHECK(std::string(session_need.status().message()).find("tern::Generator") != std::string::npos);
  testing::AlignedBytes mt_bytes = testing::RandomModelBytes(testing::TinyConfig(), 1);
  auto mt = Model::Load(mt_bytes.data(), mt_bytes.size());
  REQUIRE(mt.ok());
  CHECK(!Generator::RequiredArenaBytes(mt.value(), limits).ok());
  limits.beam_size = 2;
  CHECK(Generator::RequiredArenaBytes(lm.value(), limits).status().code() ==
        StatusCode::kNotSupported);
}

// LLaMA-style: rotary positions (all of d_head, or a part), RMSNorm, SwiGLU, untied output; and a
// model without any positions. Rotary positions enter q and k at each token's own position, so
// the checks above (prefill == steps, batch == alone, backends agree) are what tests them.
ModelConfig LlamaLikeConfig() {
  ModelConfig c = GptConfig();
  c.position = PositionKind::kRotary;
  c.rotary_base = 100.0f;
  c.norm_kind = ref::NormKind::kRMSNorm;
  c.layer_norm_eps = 1e-6f;
  c.activation = ref::Activation::kSwiGLU;
  c.tied_output = false;
  return c;
}

struct Variant {
  const char* name;
  ModelConfig config;
};

std::vector<Variant> LlamaVariants() {
  ModelConfig partial = LlamaLikeConfig();
  partial.rotary_dim = 4;  // 4 of 8 dimensions per head rotate
  ModelConfig none = LlamaLikeConfig();
  none.position = PositionKind::kNone;
  // Mistral's sliding window, shorter than kPrompt and than the longest batched prompt: the
  // prefill's tail goes token by token and the cache is a ring (both checked against steps).
  ModelConfig windowed = LlamaLikeConfig();
  windowed.sliding_window = 3;
  return {{"rotary + RMSNorm + SwiGLU", LlamaLikeConfig()},
          {"partial rotary", partial},
          {"no positions", none},
          {"sliding window 3", windowed}};
}

TEST_CASE("decoder-only sliding window: the cache holds the window; keys leave it",
          "[decoder_only]") {
  ModelConfig windowed = LlamaLikeConfig();
  windowed.sliding_window = 3;
  Limits limits;
  limits.max_batch = 2;
  limits.max_target_length = 40;
  limits.max_source_length = 16;
  testing::AlignedBytes full_bytes = testing::RandomModelBytes(LlamaLikeConfig(), 7);
  testing::AlignedBytes window_bytes = testing::RandomModelBytes(windowed, 7);
  auto full = Model::Load(full_bytes.data(), full_bytes.size());
  auto window = Model::Load(window_bytes.data(), window_bytes.size());
  REQUIRE(full.ok());
  REQUIRE(window.ok());
  for (Backend backend : Backends()) {
    limits.backend = backend;
    auto a = Generator::RequiredArenaBytes(full.value(), limits);
    auto b = Generator::RequiredArenaBytes(window.value(), limits);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    // K and V of 2 layers x 2 sequences x (40 - 3) positions x 32 floats fewer.
    CHECK(a.value() - b.value() == 2 * 2 * 2 * (40 - 3) * 32 * sizeof(float));
  }
  // The same weights with and without the window agree while the prompt fits in it, and not
  // once keys leave it.
  Lm a, b;
  Prepare(&a, LlamaLikeConfig(), Backend::kReference);
  Prepare(&b, windowed, Backend::kReference);
  DecoderOnly& ma = tern::internal::decoder_only(a.generator);
  DecoderOnly& mb = tern::internal::decoder_only(b.generator);
  const float* la = nullptr;
  const float* lb = nullptr;
  const int32_t three = 3;
  REQUIRE(ma.Prefill(kPrompt.data(), 3, &three, 1, &la).ok());
  REQUIRE(mb.Prefill(kPrompt.data(), 3, &three, 1, &lb).ok());
  CHECK(MaxAbsDiff(la, lb, ma.vocab_size()) <= 1e-6f);
  REQUIRE(ma.DecodeStep(&kPrompt[3], &la).ok());
  REQUIRE(mb.DecodeStep(&kPrompt[3], &lb).ok());
  CHECK(MaxAbsDiff(la, lb, ma.vocab_size()) > 1e-3f);
  // Stored as the architecture DecoderOnlyWindowed (format 1.7), which a 1.6 reader, not knowing
  // sliding_window, refuses as unknown instead of attending to every key; loaded back as
  // decoder-only with its window.
  const testing::AlignedBytes stored_bytes(
      convert::SerializeModel(testing::RandomContents(windowed, 7)));
  const schema::Model* stored = schema::GetSizePrefixedModel(stored_bytes.data());
  CHECK(stored->config()->architecture() == schema::Architecture_DecoderOnlyWindowed);
  CHECK(stored->format_minor() == 7);
  CHECK(window->config().architecture == Architecture::kDecoderOnly);
  CHECK(window->config().sliding_window == 3);
  CHECK(schema::GetSizePrefixedModel(full_bytes.data())->config()->architecture() ==
        schema::Architecture_DecoderOnly);
  auto load_error = [](ModelConfig c, Architecture stored_as) {
    convert::TernContents contents = testing::RandomContents(c, 1);
    // The writer's FileConfig stores the form that matches the window: overwrite the stored
    // byte in place (decoder-only, not the default, is always present).
    const testing::AlignedBytes aligned(convert::SerializeModel(contents));
    auto* config = const_cast<flatbuffers::Table*>(reinterpret_cast<const flatbuffers::Table*>(
        schema::GetSizePrefixedModel(aligned.data())->config()));
    REQUIRE(config->SetField<uint8_t>(schema::Config::VT_ARCHITECTURE,
                                      static_cast<uint8_t>(stored_as), 0));
    auto model = Model::Load(aligned.data(), aligned.size());
    return model.ok() ? std::string() : std::string(model.status().message());
  };
  CHECK(load_error(windowed, Architecture::kDecoderOnly) ==
        "config.sliding_window = 3 is stored with config.architecture = decoder_only_windowed "
        "(format 1.7), not decoder_only");
  // A windowed architecture without a window: sliding_window 0 is not written, so the plain
  // model's architecture byte is overwritten instead.
  ModelConfig plain = LlamaLikeConfig();
  CHECK(load_error(plain, Architecture::kDecoderOnlyWindowed) ==
        "config.architecture = decoder_only_windowed needs config.sliding_window");
  // A window is for decoder-only models without relative positions.
  convert::TernContents contents = testing::RandomContents(testing::TinyConfig(), 1);
  contents.config.sliding_window = 8;
  CHECK(std::string(testing::PrepareStatus(convert::SerializeModel(contents)).message()) ==
        "config.sliding_window = 8 needs a decoder-only model without relative positions");
}

TEST_CASE("decoder-only LLaMA-style: prefill equals steps, batch equals alone, backends agree",
          "[decoder_only]") {
  const std::vector<std::vector<int32_t>> prompts = {{3, 17, 5, 22, 9}, {8}, {12, 4, 33}};
  for (const Variant& v : LlamaVariants()) {
    INFO(v.name);
    std::vector<std::vector<float>> per_backend;
    for (Backend backend : Backends()) {
      INFO("backend " << static_cast<int>(backend));
      Lm lm;
      Prepare(&lm, v.config, backend, 3);
      INFO(lm.generator.backend_report());
      DecoderOnly& m = tern::internal::decoder_only(lm.generator);
      const int32_t vocab = m.vocab_size();
      // A whole prompt at once equals the same tokens one step at a time.
      const int32_t n = static_cast<int32_t>(kPrompt.size());
      const float* logits = nullptr;
      REQUIRE(m.Prefill(kPrompt.data(), n, &n, 1, &logits).ok());
      const std::vector<float> whole(logits, logits + vocab);
      const int32_t one = 1;
      REQUIRE(m.Prefill(kPrompt.data(), 1, &one, 1, &logits).ok());
      for (int32_t i = 1; i < n; ++i)
        REQUIRE(m.DecodeStep(&kPrompt[static_cast<size_t>(i)], &logits).ok());
      CHECK(MaxAbsDiff(whole.data(), logits, vocab) <= 1e-5f);
      per_backend.push_back(PrefillThenStep(&lm));

      // A batch of prompts of different lengths (rows at different positions every step)
      // equals each prompt alone.
      GenerationOptions options;
      options.max_new_tokens = 10;
      options.stop_at_eos = false;
      std::vector<int32_t> ids(3 * 5, -1), lengths = {5, 1, 3};
      for (size_t b = 0; b < 3; ++b)
        std::copy(prompts[b].begin(), prompts[b].end(), ids.begin() + 5 * b);
      std::vector<int32_t> out(3 * 10), out_lengths(3);
      REQUIRE(lm.generator
                  .Generate(ids.data(), 5, lengths.data(), 3, options, out.data(), 10,
                            out_lengths.data())
                  .ok());
      for (size_t b = 0; b < 3; ++b) {
        INFO("prompt " << b);
        std::vector<int32_t> alone(10);
        size_t length = 0;
        REQUIRE(lm.generator
                    .Generate(Span<const int32_t>(prompts[b].data(), prompts[b].size()),
                              Span<int32_t>(alone.data(), 10), &length, options)
                    .ok());
        REQUIRE(length == 10);
        CHECK(std::vector<int32_t>(out.begin() + 10 * b, out.begin() + 10 * b + 10) == alone);
      }
    }
    if (per_backend.size() == 2) {
      CHECK(MaxAbsDiff(per_backend[0].data(), per_backend[1].data(),
                       static_cast<int64_t>(per_backend[0].size())) <= 1e-4f);
    }
  }
}

TEST_CASE("decoder-only LLaMA-style: rotary positions change the logits; quantized models run",
          "[decoder_only]") {
  // The same weights (same layout, same seed) with and without rotation: positions must matter.
  Lm rotary, none;
  Prepare(&rotary, LlamaVariants()[0].config, Backend::kReference);
  Prepare(&none, LlamaVariants()[2].config, Backend::kReference);
  const std::vector<float> a = PrefillThenStep(&rotary), b = PrefillThenStep(&none);
  CHECK(MaxAbsDiff(a.data(), b.data(), static_cast<int64_t>(a.size())) > 1e-3f);
  for (Backend backend : Backends()) {
    for (DType dtype : {DType::kF16, DType::kI8, DType::kI4}) {
      INFO(DTypeName(dtype));
      Lm lm;
      Prepare(&lm, LlamaLikeConfig(), backend, 2, 40, 16, dtype);
      CheckGenerates8(lm.generator);
    }
  }
}

}  // namespace
}  // namespace tern
