// Beam search against brute force: with beam_size >= vocab^(max_length - 1) nothing is ever
// pruned, so beam search must return exactly the best hypotheses of an exhaustive search over
// every token sequence (scored independently by teacher forcing).
#include "runtime/decoding/beam_search.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

struct Hypothesis {
  std::vector<int32_t> ids;
  double score;
};

ModelConfig SmallVocab() {
  ModelConfig c = testing::TinyConfig();
  c.src_vocab_size = c.tgt_vocab_size = 8;
  c.encoder_layers = 1;
  c.decoder_layers = 2;
  c.embedding_scale = 6.0f;  // sharper distributions than the default tiny model
  return c;
}

// Every sequence that ends with EOS within max_length tokens, or is cut at max_length, with the
// sum of its tokens' log-probabilities (EOS included when generated).
std::vector<Hypothesis> Exhaustive(EncoderDecoder& ed, const int32_t* src, int32_t src_length,
                                   int32_t max_length) {
  const ModelConfig& c = ed.config();
  std::vector<Hypothesis> all;
  std::function<void(std::vector<int32_t>&)> expand = [&](std::vector<int32_t>& prefix) {
    // Score prefix + each next token by teacher forcing from scratch.
    REQUIRE(ed.Encode(src, src_length, &src_length, 1).ok());
    int32_t token = c.decoder_start_id;
    double prefix_score = 0.0;
    const float* logits = nullptr;
    for (size_t i = 0; i <= prefix.size(); ++i) {
      REQUIRE(ed.DecodeStep(&token, &logits).ok());
      if (i == prefix.size()) break;
      double max = logits[0], sum = 0.0;
      for (int v = 0; v < c.tgt_vocab_size; ++v)
        max = std::max(max, static_cast<double>(logits[v]));
      for (int v = 0; v < c.tgt_vocab_size; ++v) sum += std::exp(logits[v] - max);
      prefix_score += logits[prefix[i]] - max - std::log(sum);
      token = prefix[i];
    }
    double max = logits[0], sum = 0.0;
    for (int v = 0; v < c.tgt_vocab_size; ++v) max = std::max(max, static_cast<double>(logits[v]));
    for (int v = 0; v < c.tgt_vocab_size; ++v) sum += std::exp(logits[v] - max);
    std::vector<double> next(static_cast<size_t>(c.tgt_vocab_size));
    for (int v = 0; v < c.tgt_vocab_size; ++v)
      next[static_cast<size_t>(v)] = prefix_score + logits[v] - max - std::log(sum);
    for (int32_t v = 0; v < c.tgt_vocab_size; ++v) {
      if (v == c.eos_id) {
        all.push_back({prefix, next[static_cast<size_t>(v)]});
      } else if (static_cast<int32_t>(prefix.size()) + 1 == max_length) {
        std::vector<int32_t> ids = prefix;
        ids.push_back(v);
        all.push_back({ids, next[static_cast<size_t>(v)]});
      } else {
        prefix.push_back(v);
        expand(prefix);
        prefix.pop_back();
      }
    }
  };
  std::vector<int32_t> prefix;
  expand(prefix);
  std::sort(all.begin(), all.end(),
            [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  return all;
}

TEST_CASE("beam search with an unpruned beam equals exhaustive search", "[beam]") {
  const ModelConfig config = SmallVocab();
  for (uint32_t seed : {1u, 2u, 3u}) {
    testing::AlignedBytes bytes = testing::RandomModelBytes(config, seed);
    Model model = Model::Load(bytes.data(), bytes.size()).value();
    const int32_t max_length = 3;
    Limits limits;
    limits.max_batch = 2;
    limits.max_source_length = 6;
    limits.max_target_length = max_length;
    limits.beam_size = 64;  // = 8^(3-1): nothing pruned
    std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
    Session session;
    REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
    const int32_t src[2][6] = {{4, 5, 6, 7, 2, 0}, {3, 3, 2, 0, 0, 0}};
    const int32_t src_lengths[2] = {5, 3};
    DecodingOptions options;
    options.beam_size = 64;
    options.n_best = 5;
    options.length_penalty = 0.0f;  // raw sums, as the exhaustive search ranks them
    std::vector<int32_t> out(2 * 5 * max_length);
    std::vector<int32_t> lengths(2 * 5);
    std::vector<float> scores(2 * 5);
    REQUIRE(session
                .TranslateIds(&src[0][0], 6, src_lengths, 2, options, out.data(), max_length,
                              lengths.data(), scores.data())
                .ok());
    for (int b = 0; b < 2; ++b) {
      const std::vector<Hypothesis> all =
          Exhaustive(tern::internal::encoder_decoder(session), src[b], src_lengths[b], max_length);
      REQUIRE(all.size() == 1 + 7 + 49 + 7 * 7 * 7);
      for (int n = 0; n < 5; ++n) {
        const int k = b * 5 + n;
        std::vector<int32_t> got(out.begin() + k * max_length,
                                 out.begin() + k * max_length + lengths[k]);
        INFO("seed " << seed << " sentence " << b << " rank " << n);
        CHECK(got == all[static_cast<size_t>(n)].ids);
        CHECK_THAT(scores[static_cast<size_t>(k)],
                   Catch::Matchers::WithinAbs(all[static_cast<size_t>(n)].score, 1e-4));
      }
    }
  }
}

TEST_CASE("beam search: batch equals one by one, beam 1 equals greedy, length penalty reorders",
          "[beam]") {
  testing::ParityFixture f = testing::LoadParityFixture("pre_gelu");
  Model model = Model::Load(f.model.data(), f.model.size()).value();
  Limits limits;
  limits.max_batch = 3;
  limits.max_source_length = 8;
  limits.max_target_length = 12;
  limits.beam_size = 4;
  std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
  Session session;
  REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  DecodingOptions beam;
  beam.beam_size = 4;
  beam.n_best = 2;
  beam.length_penalty = 0.6f;
  std::vector<int32_t> batch_out(3 * 2 * 12), batch_len(3 * 2);
  std::vector<float> batch_scores(3 * 2);
  REQUIRE(session
              .TranslateIds(f.src_ids.data(), f.src_seq, f.src_lengths.data(), 3, beam,
                            batch_out.data(), 12, batch_len.data(), batch_scores.data())
              .ok());
  for (int b = 0; b < 3; ++b) {
    std::vector<int32_t> out(2 * 12), len(2);
    std::vector<float> scores(2);
    REQUIRE(session
                .TranslateIds(f.src_ids.data() + b * f.src_seq, f.src_seq, &f.src_lengths[b], 1,
                              beam, out.data(), 12, len.data(), scores.data())
                .ok());
    for (int n = 0; n < 2; ++n) {
      INFO("sentence " << b << " rank " << n);
      CHECK(len[n] == batch_len[b * 2 + n]);
      CHECK(std::equal(out.begin() + n * 12, out.begin() + n * 12 + len[n],
                       batch_out.begin() + (b * 2 + n) * 12));
      // Same ids; scores equal up to float rounding (XNNPACK may sum in another order for
      // another row count).
      CHECK(std::fabs(scores[n] - batch_scores[b * 2 + n]) <= 1e-5f * std::fabs(scores[n]) + 1e-6f);
    }
    CHECK(scores[0] >= scores[1]);  // best first
  }
  // The beam's best hypothesis scores at least as well as greedy's under the same measure.
  DecodingOptions greedy;
  std::vector<int32_t> gout(12);
  int32_t glen = 0;
  float gscore = 0.0f;
  REQUIRE(session
              .TranslateIds(f.src_ids.data(), f.src_seq, &f.src_lengths[0], 1, greedy, gout.data(),
                            12, &glen, &gscore)
              .ok());
  DecodingOptions raw = beam;
  raw.length_penalty = 0.0f;
  raw.n_best = 1;
  std::vector<int32_t> bout(12);
  int32_t blen = 0;
  float bscore = 0.0f;
  REQUIRE(session
              .TranslateIds(f.src_ids.data(), f.src_seq, &f.src_lengths[0], 1, raw, bout.data(), 12,
                            &blen, &bscore)
              .ok());
  CHECK(bscore >= gscore - 1e-5f);
}

TEST_CASE("beam options are validated", "[beam]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 5);
  Model model = Model::Load(bytes.data(), bytes.size()).value();
  Limits limits;
  limits.max_source_length = 8;
  limits.max_target_length = 8;
  limits.beam_size = 2;
  std::vector<uint8_t> arena(Session::RequiredArenaBytes(model, limits).value());
  Session session;
  REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  const int32_t src[] = {4, 5, 2};
  const int32_t length = 3;
  std::vector<int32_t> out(4 * 8), lengths(4);
  auto translate = [&](const DecodingOptions& o) {
    return session.TranslateIds(src, 3, &length, 1, o, out.data(), 8, lengths.data());
  };
  // Beam size is one setting with a bound (docs/api.md): limits.beam_size (2 here) is the widest
  // beam the arena is planned for, options.beam_size picks 1 (greedy) to it per call, and a
  // refusal names both.
  DecodingOptions options;
  options.beam_size = 4;  // more than the session planned for
  Status s = translate(options);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "options.beam_size = 4; this session allows 1 (greedy) to 2, the limits.beam_size its "
        "arena was planned for at Prepare");
  options.beam_size = 0;
  s = translate(options);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(
      std::string(s.message()).find("options.beam_size = 0; this session allows 1 (greedy) to 2") ==
      0);
  options.beam_size = 2;
  options.n_best = 3;
  s = translate(options);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("options.n_best = 3; 1 to options.beam_size (2)") == 0);
  options.beam_size = 1;  // greedy asks for one hypothesis
  options.n_best = 2;
  s = translate(options);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("options.n_best = 2; 1 to options.beam_size (1)") == 0);
  // Every width within the bound runs on the same arena: greedy and beam 2.
  options.n_best = 1;
  CHECK(translate(options).ok());
  options.beam_size = 2;
  options.n_best = 2;
  CHECK(translate(options).ok());
  // BeamSearch called directly (below the session) keeps its own check, naming the same bound.
  options.beam_size = 3;
  EncoderDecoder& ed = tern::internal::encoder_decoder(session);
  REQUIRE(ed.Encode(src, 3, &length, 1).ok());
  s = BeamSearch(ed, tern::internal::translation_state(session), options, out.data(), 8,
                 lengths.data(), nullptr);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("limits.beam_size") != std::string::npos);
}

}  // namespace
}  // namespace tern
