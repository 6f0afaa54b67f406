// Decoding options on the greedy path: each option's effect is checked on a real model (the
// pre_gelu parity fixture, whose plain greedy outputs repeat tokens) or against a hand-made
// logits row.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "runtime/api/session_internal.h"
#include "runtime/decoding/logits_processing.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

struct Fixture {
  testing::ParityFixture f = testing::LoadParityFixture("pre_gelu");
  Model model;
  std::vector<uint8_t> arena;
  Session session;
  Fixture() {
    model = Model::Load(f.model.data(), f.model.size()).value();
    Limits limits;
    limits.max_source_length = 16;
    limits.max_target_length = 16;
    arena.resize(Session::RequiredArenaBytes(model, limits).value());
    REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  }
  Span<const int32_t> source(int b) const {
    return {f.src_ids.data() + b * f.src_seq, static_cast<size_t>(f.src_lengths[b])};
  }
  std::vector<int32_t> Translate(int b, const DecodingOptions& options, Status* status = nullptr,
                                 float* score = nullptr) {
    std::vector<int32_t> out(16);
    int32_t length = 0;
    const int32_t src_length = f.src_lengths[b];
    Status s = session.TranslateIds(f.src_ids.data() + b * f.src_seq, f.src_seq, &src_length, 1,
                                    options, out.data(), 16, &length, score);
    if (status)
      *status = s;
    else
      REQUIRE(s.ok());
    out.resize(static_cast<size_t>(length));
    return out;
  }
};

TEST_CASE("ProcessLogits: min length, repetition penalty, no-repeat n-grams", "[decoding]") {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> logits = {1.0f, 2.0f, -2.0f, 4.0f, 0.5f};
  const int32_t history[] = {3, 2, 3};
  DecodingOptions options;
  options.min_length = 4;
  options.repetition_penalty = 2.0f;
  ProcessLogits(options, /*eos_id=*/1, history, 3, logits.data(), 5);
  CHECK(logits[1] == -inf);   // EOS banned before 4 tokens
  CHECK(logits[3] == 2.0f);   // positive repeated token divided once (3 appears twice)
  CHECK(logits[2] == -4.0f);  // negative repeated token multiplied
  CHECK(logits[0] == 1.0f);
  std::vector<float> row = {0, 0, 0, 0, 0};
  DecodingOptions ngram;
  ngram.no_repeat_ngram_size = 2;
  const int32_t h2[] = {4, 0, 4};  // bigram (4, 0) seen: after 4, 0 is banned
  ProcessLogits(ngram, 1, h2, 3, row.data(), 5);
  CHECK(row[0] == -inf);
  CHECK(row[4] == 0.0f);
  CHECK_THAT(LogProbability(std::vector<float>{0.0f, 0.0f}.data(), 2, 1),
             Catch::Matchers::WithinAbs(std::log(0.5), 1e-6));
}

// The search in shortlist space (a row of candidate logits) against the same logits spread
// over the full vocabulary with -inf elsewhere (the masked search): every adjustment lands on
// the same token, the argmax maps to the same id (ties: the lowest id) and log-probabilities
// agree.
TEST_CASE("ProcessLogits / ArgMax over candidates match the masked full vocabulary",
          "[decoding][shortlist]") {
  const float inf = std::numeric_limits<float>::infinity();
  const int32_t vocab = 12;
  const int32_t ids[] = {0, 2, 3, 5, 7, 8, 11};  // ascending, eos = 2
  const std::vector<float> packed = {0.5f, 3.0f, -1.0f, 2.5f, 2.0f, 2.5f, -3.0f};
  // History: 5 repeated, 9 (not a candidate: nothing to adjust), then the prefix 5 for the
  // bigram (5, 8).
  const int32_t history[] = {5, 8, 9, 5};
  for (int variant = 0; variant < 3; ++variant) {
    DecodingOptions options;
    options.min_length = variant == 0 ? 5 : 0;
    options.repetition_penalty = variant == 1 ? 1.7f : 1.0f;
    options.no_repeat_ngram_size = variant == 2 ? 2 : 0;
    INFO("variant " << variant);
    std::vector<float> small = packed;
    std::vector<float> full(vocab, -inf);
    for (size_t i = 0; i < small.size(); ++i) full[static_cast<size_t>(ids[i])] = small[i];
    const Span<const int32_t> candidates(ids, 7);
    ProcessLogits(options, 2, history, 4, small.data(), 7, candidates);
    ProcessLogits(options, 2, history, 4, full.data(), vocab);
    for (size_t i = 0; i < small.size(); ++i) CHECK(small[i] == full[static_cast<size_t>(ids[i])]);
    const int32_t index = ArgMax(small.data(), 7);
    CHECK(ids[index] == ArgMax(full.data(), vocab));
    CHECK_THAT(LogProbability(small.data(), 7, index),
               Catch::Matchers::WithinAbs(LogProbability(full.data(), vocab, ids[index]), 1e-6));
  }
  CHECK(LogitIndex(Span<const int32_t>(ids, 7), 7, 9) == -1);
  CHECK(LogitIndex(Span<const int32_t>(ids, 7), 7, 8) == 5);
  CHECK(LogitIndex(Span<const int32_t>(), 12, 8) == 8);
}

TEST_CASE("no_repeat_ngram_size removes repeated n-grams", "[decoding]") {
  Fixture fx;
  DecodingOptions plain;
  const std::vector<int32_t> repeated = fx.Translate(1, plain);
  REQUIRE(repeated.size() >= 4);  // "30 30 25 30 25 30 ..." repeats bigrams
  DecodingOptions options;
  options.no_repeat_ngram_size = 2;
  const std::vector<int32_t> out = fx.Translate(1, options);
  std::set<std::pair<int32_t, int32_t>> bigrams;
  for (size_t i = 0; i + 1 < out.size(); ++i) CHECK(bigrams.insert({out[i], out[i + 1]}).second);
  CHECK(out != repeated);
}

TEST_CASE("min_length keeps EOS away and max_length_ratio caps by source length", "[decoding]") {
  Fixture fx;
  const std::vector<int32_t> plain = fx.Translate(0, DecodingOptions());
  REQUIRE(plain.size() == 6);  // ends with EOS after 6 tokens
  DecodingOptions longer;
  longer.min_length = 9;
  CHECK(fx.Translate(0, longer).size() >= 9);
  DecodingOptions ratio;
  ratio.max_length_ratio = 0.5f;  // source of 7 tokens: ceil(3.5) + 1 = 5 steps
  ratio.max_length_extra = 1;
  CHECK(fx.Translate(0, ratio).size() == 5);
  const std::vector<int32_t> capped = fx.Translate(0, ratio);
  CHECK(std::vector<int32_t>(plain.begin(), plain.begin() + 5) == capped);
}

struct Seen {
  std::vector<int32_t> tokens;
  int32_t stop_after = -1;
};

bool Record(void* user, int32_t sentence, int32_t, int32_t token) {
  auto* seen = static_cast<Seen*>(user);
  (void)sentence;
  seen->tokens.push_back(token);
  return seen->stop_after < 0 || static_cast<int32_t>(seen->tokens.size()) < seen->stop_after;
}

TEST_CASE("the token callback streams every token and can cancel", "[decoding]") {
  Fixture fx;
  Seen seen;
  DecodingOptions options;
  options.on_token = Record;
  options.user = &seen;
  const std::vector<int32_t> out = fx.Translate(0, options);
  CHECK(seen.tokens == out);
  Seen cancel;
  cancel.stop_after = 3;
  options.user = &cancel;
  Status status;
  fx.Translate(0, options, &status);
  CHECK(status.code() == StatusCode::kCancelled);
  CHECK(cancel.tokens.size() == 3);
}

TEST_CASE("greedy scores are the sum of the chosen tokens' log-probabilities", "[decoding]") {
  Fixture fx;
  float score = 0.0f;
  const std::vector<int32_t> out = fx.Translate(0, DecodingOptions(), nullptr, &score);
  // Teacher-force the same tokens (plus EOS) and add their log-probabilities independently.
  EncoderDecoder& ed = tern::internal::encoder_decoder(fx.session);
  const int32_t length = fx.f.src_lengths[0];
  REQUIRE(ed.Encode(fx.f.src_ids.data(), fx.f.src_seq, &length, 1).ok());
  double expected = 0.0;
  int32_t token = fx.f.config.decoder_start_id;
  std::vector<int32_t> targets = out;
  targets.push_back(fx.f.config.eos_id);
  for (int32_t next : targets) {
    const float* logits = nullptr;
    REQUIRE(ed.DecodeStep(&token, &logits).ok());
    double max = logits[0], sum = 0.0;
    for (int32_t v = 0; v < fx.f.config.tgt_vocab_size; ++v)
      max = std::max(max, static_cast<double>(logits[v]));
    for (int32_t v = 0; v < fx.f.config.tgt_vocab_size; ++v) sum += std::exp(logits[v] - max);
    expected += logits[next] - max - std::log(sum);
    token = next;
  }
  CHECK_THAT(score, Catch::Matchers::WithinAbs(expected, 1e-4));
  CHECK(score < 0.0f);
}

}  // namespace
}  // namespace tern
