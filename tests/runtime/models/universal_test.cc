// The Universal Transformer beyond parity (encoder_decoder_parity_test.cc has the fixtures
// against PyTorch): the arena grows with universal_steps only by the per-step self-attention
// K/V caches, int8 conversions run, beam search reorders every step's cache, and the loader
// names what is wrong with a universal config or its halting tensors.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "converter/writer.h"
#include "runtime/api/session_internal.h"
#include "tests/support/prepare_status.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::Backends;

ModelConfig UniversalConfig(int32_t steps, float act_threshold) {
  ModelConfig c = testing::TinyConfig();
  c.architecture = Architecture::kUniversal;
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.universal_steps = steps;
  c.act_threshold = act_threshold;
  return c;
}

TEST_CASE("the arena grows with universal_steps only by the per-step K/V caches",
          "[universal][arena]") {
  // The shared block's weights, its XNNPACK operators, the state, the scratch and the ACT state
  // are the same for any T: the plans for T = 2 and T = 6 list the same buffers with the same
  // sizes, except the self-attention K/V caches, which grow by exactly 4 steps' worth of
  // 2 (K and V) x decoder rows x max_target_length x d_model floats. The greedy planner lets
  // the caches share bytes with the encoder's scratch (never alive together), so the total
  // grows by at most that (it can even shrink when a larger buffer packs better).
  for (Backend backend : Backends()) {
    for (float act : {0.0f, 0.9f}) {
      for (int32_t beam : {1, 3}) {
        Limits limits;
        limits.backend = backend;
        limits.max_batch = 2;
        limits.beam_size = beam;
        limits.max_source_length = 10;
        limits.max_target_length = 12;
        const size_t d = 16, rows = 2 * static_cast<size_t>(beam);
        const size_t step_cache = 2 * rows * 12 * d * sizeof(float);
        INFO("backend " << static_cast<int>(backend) << ", act " << act << ", beam " << beam);
        GreedyPlanner plans[2];
        size_t need[2] = {0, 0};
        const int32_t steps[2] = {2, 6};
        for (int i = 0; i < 2; ++i) {
          testing::AlignedBytes bytes =
              testing::RandomModelBytes(UniversalConfig(steps[i], act), 3);
          auto model = Model::Load(bytes.data(), bytes.size());
          INFO(model.status().message());
          REQUIRE(model.ok());
          REQUIRE(EncoderDecoder::PlanArena(model.value(), limits, &plans[i]).ok());
          need[i] = Session::RequiredArenaBytes(model.value(), limits).value();
        }
        REQUIRE(plans[0].count() == plans[1].count());
        bool found = false;
        for (int id = 0; id < plans[0].count(); ++id) {
          const std::string name = plans[0].name(id);
          INFO("buffer " << name);
          REQUIRE(name == plans[1].name(id));
          if (name == "self_kv") {
            found = true;
            // (Planner sizes include the tail padding, rounded to the alignment.)
            CHECK(plans[0].size(id) >= 2 * step_cache);
            CHECK(plans[1].size(id) - plans[0].size(id) == 4 * step_cache);
          } else {
            CHECK(plans[0].size(id) == plans[1].size(id));
          }
        }
        CHECK(found);
        INFO(need[0] << " -> " << need[1] << " bytes");
        CHECK(need[1] <= need[0] + 4 * step_cache);
      }
    }
  }
}

TEST_CASE("int8 conversions of the universal fixtures load and run", "[universal][parity]") {
  for (const char* name : {"universal_plain", "universal_act"}) {
    const testing::ParityFixture f32 = testing::LoadParityFixture(name);
    const testing::ParityFixture f = testing::LoadParityFixture(name, DType::kI8);
    for (Backend backend : Backends()) {
      INFO(name << " on backend " << static_cast<int>(backend));
      auto model = Model::Load(f.model.data(), f.model.size());
      INFO(model.status().message());
      REQUIRE(model.ok());
      Limits limits;
      limits.backend = backend;
      limits.max_batch = static_cast<int32_t>(f.batch);
      limits.max_source_length = static_cast<int32_t>(f.src_seq);
      limits.max_target_length = static_cast<int32_t>(std::max(f.tgt_seq, f.max_len));
      std::vector<uint8_t> arena(Session::RequiredArenaBytes(model.value(), limits).value());
      Session session;
      REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
      INFO(session.backend_report());
      EncoderDecoder& ed = tern::internal::encoder_decoder(session);
      REQUIRE(ed.Encode(f.src_ids.data(), f.src_seq, f.src_lengths.data(),
                        static_cast<int32_t>(f.batch))
                  .ok());
      std::vector<int32_t> tokens(static_cast<size_t>(f.batch));
      const int64_t v = f.config.tgt_vocab_size;
      float worst = 0.0f;
      for (int64_t t = 0; t < f.tgt_seq; ++t) {
        for (int64_t b = 0; b < f.batch; ++b) tokens[b] = f.tgt_in[b * f.tgt_seq + t];
        const float* logits = nullptr;
        REQUIRE(ed.DecodeStep(tokens.data(), &logits).ok());
        for (int64_t b = 0; b < f.batch; ++b) {
          for (int64_t i = 0; i < v; ++i) {
            REQUIRE(std::isfinite(logits[b * v + i]));
            worst = std::max(
                worst, std::fabs(logits[b * v + i] - f32.logits[(b * f.tgt_seq + t) * v + i]));
          }
        }
      }
      // Quantized weights change the logits (and may move a halting decision by a step), but
      // stay in the neighbourhood of fp32.
      INFO("max logit error vs fp32 " << worst);
      CHECK(worst > 0.0f);
      CHECK(worst < 1.5f);
      CHECK(ed.kernel_fallback_calls() == 0);
      std::vector<int32_t> out(static_cast<size_t>(f.batch * f.max_len));
      std::vector<int32_t> lengths(static_cast<size_t>(f.batch));
      GreedyOptions options;
      options.max_length = static_cast<int32_t>(f.max_len);
      REQUIRE(session
                  .TranslateIds(f.src_ids.data(), f.src_seq, f.src_lengths.data(),
                                static_cast<int32_t>(f.batch), options, out.data(), f.max_len,
                                lengths.data())
                  .ok());
    }
  }
}

TEST_CASE("beam search over a universal transformer: batch equals one by one",
          "[universal][beam]") {
  // Beam search reorders the self-attention caches of every recurrent step (ReorderRows).
  for (const char* name : {"universal_plain", "universal_act"}) {
    testing::ParityFixture f = testing::LoadParityFixture(name);
    Model model = Model::Load(f.model.data(), f.model.size()).value();
    for (Backend backend : Backends()) {
      INFO(name << " on backend " << static_cast<int>(backend));
      Limits limits;
      limits.backend = backend;
      limits.max_batch = 3;
      limits.max_source_length = static_cast<int32_t>(f.src_seq);
      limits.max_target_length = 12;
      limits.beam_size = 3;
      std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
      Session session;
      REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
      DecodingOptions beam;
      beam.beam_size = 3;
      std::vector<int32_t> batch_out(3 * 12), batch_len(3);
      std::vector<float> batch_scores(3);
      REQUIRE(session
                  .TranslateIds(f.src_ids.data(), f.src_seq, f.src_lengths.data(), 3, beam,
                                batch_out.data(), 12, batch_len.data(), batch_scores.data())
                  .ok());
      for (int b = 0; b < 3; ++b) {
        std::vector<int32_t> out(12);
        int32_t len = 0;
        float score = 0.0f;
        REQUIRE(session
                    .TranslateIds(f.src_ids.data() + b * f.src_seq, f.src_seq, &f.src_lengths[b], 1,
                                  beam, out.data(), 12, &len, &score)
                    .ok());
        INFO("sentence " << b);
        CHECK(len == batch_len[b]);
        CHECK(std::equal(out.begin(), out.begin() + len, batch_out.begin() + b * 12));
        CHECK(std::fabs(score - batch_scores[b]) <= 1e-5f * std::fabs(score) + 1e-6f);
        // The beam's best scores at least as well as greedy under the same measure.
        DecodingOptions greedy;
        std::vector<int32_t> gout(12);
        int32_t glen = 0;
        float gscore = 0.0f;
        REQUIRE(session
                    .TranslateIds(f.src_ids.data() + b * f.src_seq, f.src_seq, &f.src_lengths[b], 1,
                                  greedy, gout.data(), 12, &glen, &gscore)
                    .ok());
        DecodingOptions raw = beam;
        raw.length_penalty = 0.0f;
        float bscore = 0.0f;
        REQUIRE(session
                    .TranslateIds(f.src_ids.data() + b * f.src_seq, f.src_seq, &f.src_lengths[b], 1,
                                  raw, out.data(), 12, &len, &bscore)
                    .ok());
        CHECK(bscore >= gscore - 1e-5f);
      }
    }
  }
}

// Load, then the architecture check a session's prepare runs (tests/support/prepare_status.h).
Status LoadStatus(const convert::TernContents& c) {
  return testing::PrepareStatus(convert::SerializeModel(c));
}

void Remove(convert::TernContents* c, const std::string& name) {
  const size_t before = c->tensors.size();
  c->tensors.erase(std::remove_if(c->tensors.begin(), c->tensors.end(),
                                  [&](const convert::EncodedTensor& t) { return t.name == name; }),
                   c->tensors.end());
  REQUIRE(c->tensors.size() + 1 == before);
}

TEST_CASE("load or prepare names what is wrong with a universal transformer",
          "[universal][loader]") {
  SECTION("a valid one loads") {
    CHECK(LoadStatus(testing::RandomContents(UniversalConfig(3, 0.9f), 1)).ok());
  }
  SECTION("more than one encoder layer") {
    ModelConfig c = UniversalConfig(3, 0.0f);
    c.encoder_layers = 2;
    const Status s = LoadStatus(testing::RandomContents(c, 1));
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring("config.encoder_layers = 2"));
  }
  SECTION("more than one decoder layer") {
    ModelConfig c = UniversalConfig(3, 0.0f);
    c.decoder_layers = 3;
    const Status s = LoadStatus(testing::RandomContents(c, 1));
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring("config.decoder_layers = 3"));
  }
  SECTION("an embedding LayerNorm") {
    convert::TernContents c = testing::RandomContents(UniversalConfig(3, 0.0f), 1);
    c.config.layernorm_embedding = true;
    const Status s = LoadStatus(c);
    CHECK(s.code() == StatusCode::kNotSupported);
    CHECK(std::string(s.message()) ==
          "config.layernorm_embedding: a universal transformer does not support a LayerNorm on "
          "the embeddings");
  }
  SECTION("no steps") {
    const Status s = LoadStatus(testing::RandomContents(UniversalConfig(0, 0.0f), 1));
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring("config.universal_steps = 0"));
  }
  SECTION("a missing halting tensor") {
    for (const char* name : {"encoder.halting.weight", "encoder.halting.bias",
                             "decoder.halting.weight", "decoder.halting.bias"}) {
      convert::TernContents c = testing::RandomContents(UniversalConfig(3, 0.5f), 1);
      Remove(&c, name);
      const Status s = LoadStatus(c);
      INFO(s.message());
      CHECK(s.code() == StatusCode::kMissingTensor);
      CHECK_THAT(s.message(), ContainsSubstring(name));
    }
  }
  SECTION("a halting unit of the wrong shape or dtype") {
    convert::TernContents c = testing::RandomContents(UniversalConfig(3, 0.5f), 1);
    for (auto& t : c.tensors) {
      if (t.name == "decoder.halting.weight") t.shape = {16, 1};  // same bytes, transposed
    }
    Status s = LoadStatus(c);
    CHECK(s.code() == StatusCode::kShapeMismatch);
    CHECK_THAT(s.message(), ContainsSubstring("decoder.halting.weight"));
    c = testing::RandomContents(UniversalConfig(3, 0.5f), 1);
    for (auto& t : c.tensors) {
      if (t.name == "encoder.halting.weight") {
        convert::HostTensor h;
        h.name = t.name;
        h.shape = t.shape;
        h.values.assign(16, 0.25f);
        t = convert::Encode(h, DType::kF16, 0);
      }
    }
    s = LoadStatus(c);
    CHECK(s.code() == StatusCode::kDTypeMismatch);
    CHECK_THAT(s.message(), ContainsSubstring("encoder.halting.weight"));
  }
  SECTION("halting tensors without ACT are not part of the model") {
    // Present iff act_threshold > 0: the converter rejects them (tests/converter), and a file
    // without ACT simply has none.
    convert::TernContents c = testing::RandomContents(UniversalConfig(3, 0.0f), 1);
    for (const auto& t : c.tensors) CHECK(t.name.find("halting") == std::string::npos);
  }
}

}  // namespace
}  // namespace tern
