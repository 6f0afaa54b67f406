// The vocabulary shortlist at run time (docs/shortlist.md): each sentence's logits exist for its
// candidates only (F frequent + K per distinct source token + the special ids) and match the
// full projection there; the search never leaves them; a sentence translates the same alone and
// in any batch; use_shortlist = false is the model without a shortlist; the arena plan holds
// its buffers. Both backends, f32 / f16 / int8 / int4 output weights, greedy and beam search.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tern/tern.hpp"
#include "tests/runtime/models/backend_models.h"

namespace tern {
namespace {

struct Case {
  DType dtype;
  int64_t group;
};
const Case kCases[] = {
    {DType::kF32, 0}, {DType::kF16, 0}, {DType::kI8, 0}, {DType::kI4, 0}, {DType::kI4, 32}};

// Three sources of 5, 9 and 2 tokens in rows of 9 (vocab 40).
const int32_t kIds[3 * 9] = {4,  9,  13, 27, 2,  0,  0,  0,  0,  //
                             30, 31, 8,  8,  17, 22, 35, 11, 2,  //
                             38, 2};
const int32_t kLengths[3] = {5, 9, 2};

Limits LimitsFor(Backend backend) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 3;
  limits.max_source_length = 9;
  limits.max_target_length = 8;
  limits.beam_size = 3;
  return limits;
}

struct Prepared {
  testing::AlignedBytes bytes;  // the model's bytes, kept alive with it
  Model model;
  std::vector<uint8_t> arena;
  Session session;
  Prepared(testing::AlignedBytes file, const Limits& limits) : bytes(std::move(file)) {
    auto loaded = Model::Load(bytes.data(), bytes.size());
    REQUIRE(loaded.ok());
    model = loaded.value();
    auto need = Session::RequiredArenaBytes(model, limits);
    REQUIRE(need.ok());
    arena.resize(need.value());
    REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  }
};

std::vector<int32_t> CandidatesOf(const ModelConfig& config, int32_t sentence) {
  return convert::Candidates(
      testing::ToyShortlist(config),
      std::vector<int32_t>(kIds + sentence * 9, kIds + sentence * 9 + kLengths[sentence]),
      {config.pad_id, config.bos_id, config.eos_id, config.unk_id, config.decoder_start_id});
}

struct Output {
  std::vector<int32_t> ids, lengths;
  std::vector<float> scores;
};

// Sentences [first, first + count) as one batch; n_best rows per sentence.
Output Translate(Session& session, int32_t first, int32_t count, const DecodingOptions& options) {
  const int32_t rows = count * options.n_best;
  Output o{std::vector<int32_t>(static_cast<size_t>(rows) * 8),
           std::vector<int32_t>(static_cast<size_t>(rows)),
           std::vector<float>(static_cast<size_t>(rows))};
  const Status s = session.TranslateIds(kIds + first * 9, 9, kLengths + first, count, options,
                                        o.ids.data(), 8, o.lengths.data(), o.scores.data());
  INFO(s.message());
  REQUIRE(s.ok());
  return o;
}

TEST_CASE("shortlist logits: the candidates' rows of the full projection, packed", "[shortlist]") {
  const ModelConfig config = testing::WideConfig();
  for (Backend backend : testing::Backends()) {
    for (const Case& c : kCases) {
      INFO("backend " << static_cast<int>(backend) << ", dtype " << DTypeName(c.dtype));
      const testing::AlignedBytes bytes = testing::ShortlistModelBytes(config, 5, c.dtype, c.group);
      Prepared p(bytes, LimitsFor(backend));
      EncoderDecoder& ed = internal::encoder_decoder(p.session);
      const int32_t v = config.tgt_vocab_size;
      std::vector<float> full(3 * static_cast<size_t>(v));
      const int32_t start[3] = {config.decoder_start_id, config.decoder_start_id,
                                config.decoder_start_id};
      const float* logits = nullptr;
      ed.UseShortlist(false);
      REQUIRE(ed.Encode(kIds, 9, kLengths, 3).ok());
      CHECK(!ed.shortlist_active());
      REQUIRE(ed.DecodeStep(start, &logits).ok());
      std::copy(logits, logits + full.size(), full.begin());
      ed.UseShortlist(true);
      REQUIRE(ed.Encode(kIds, 9, kLengths, 3).ok());
      REQUIRE(ed.shortlist_active());
      REQUIRE(ed.DecodeStep(start, &logits).ok());
      // The copies of the candidates' rows hold at most the vocabulary's 40 rows: the first
      // sentence's are copied, the second's no longer fit and are read in place, the third's
      // fit after the first's. Both ways give the same logits.
      REQUIRE(CandidatesOf(config, 0).size() + CandidatesOf(config, 1).size() > 40);
      REQUIRE(CandidatesOf(config, 0).size() + CandidatesOf(config, 2).size() <= 40);
      CHECK(ed.shortlist_copied(0));
      CHECK(!ed.shortlist_copied(1));
      CHECK(ed.shortlist_copied(2));
      for (int32_t b = 0; b < 3; ++b) {
        const std::vector<int32_t> want = CandidatesOf(config, b);
        const Span<const int32_t> got = ed.shortlist_rows(b);
        REQUIRE(std::vector<int32_t>(got.begin(), got.end()) == want);
        REQUIRE(ed.row_candidates(b).size() == want.size());
        // Packed in candidate order, row b at b * logits_stride(). Where the full projection
        // runs XNNPACK's qd8 paths (int8, int4 per row) the row kernel rounds as they do: the
        // same bits on x86-64 (linear_rows.cc lists the ARM kernels that fold the scales in
        // another order). Elsewhere the row kernel computes in float: the reference backend's
        // math to rounding, and within XNNPACK's quantization of x (blockwise int4) otherwise.
        bool exact = backend == Backend::kXnnpack && c.group == 0 &&
                     (c.dtype == DType::kI8 || c.dtype == DType::kI4);
#if !defined(__x86_64__) || !(defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK)
        exact = false;
#endif
        for (size_t i = 0; i < want.size(); ++i) {
          const float y = logits[b * ed.logits_stride() + static_cast<int64_t>(i)];
          const float f = full[static_cast<size_t>(b * v + want[i])];
          if (exact) {
            CHECK(y == f);
          } else {
            CHECK(std::fabs(y - f) < 0.05f);  // blockwise int4: XNNPACK quantizes x, not we
          }
        }
      }
    }
  }
}

// Equal up to rounding: 0.1% of the score, or 1e-4 near zero.
bool Close(float a, float b) { return std::fabs(a - b) <= std::max(1e-4f, 1e-3f * std::fabs(b)); }

TEST_CASE("shortlist: outputs stay inside the candidates, and match alone and in batches",
          "[shortlist]") {
  const ModelConfig config = testing::WideConfig();
  for (Backend backend : testing::Backends()) {
    for (const Case& c : kCases) {
      INFO("backend " << static_cast<int>(backend) << ", dtype " << DTypeName(c.dtype));
      Prepared p(testing::ShortlistModelBytes(config, 7, c.dtype, c.group), LimitsFor(backend));
      for (int beam : {1, 3}) {
        INFO("beam " << beam);
        DecodingOptions options;
        options.beam_size = beam;
        options.n_best = beam == 3 ? 2 : 1;
        options.repetition_penalty = 1.3f;
        options.no_repeat_ngram_size = 2;
        const int32_t n = options.n_best;
        const Output batch = Translate(p.session, 0, 3, options);
        const Output tail = Translate(p.session, 1, 2, options);
        for (int32_t b = 0; b < 3; ++b) {
          const std::vector<int32_t> allowed = CandidatesOf(config, b);
          const Output alone = Translate(p.session, b, 1, options);
          for (int32_t j = 0; j < n; ++j) {
            const size_t row = static_cast<size_t>(b * n + j);
            CHECK(alone.lengths[static_cast<size_t>(j)] == batch.lengths[row]);
            // Scores within rounding: the encoder's GEMMs may tile a batch differently from
            // one sentence (XNNPACK on aarch64, whose f16 operator computes in f16: measured
            // 1.3e-3 apart on a score of -13.65), which moves the last bits.
            CAPTURE(alone.scores[static_cast<size_t>(j)], batch.scores[row]);
            CHECK(Close(alone.scores[static_cast<size_t>(j)], batch.scores[row]));
            for (int32_t t = 0; t < batch.lengths[row]; ++t) {
              const int32_t id = batch.ids[row * 8 + static_cast<size_t>(t)];
              CHECK(alone.ids[static_cast<size_t>(j) * 8 + static_cast<size_t>(t)] == id);
              CHECK(std::binary_search(allowed.begin(), allowed.end(), id));
            }
            if (b >= 1) {
              const size_t in_tail = static_cast<size_t>((b - 1) * n + j);
              CHECK(tail.lengths[in_tail] == batch.lengths[row]);
              CAPTURE(tail.scores[in_tail]);
              CHECK(Close(tail.scores[in_tail], batch.scores[row]));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("the 16-bit (1.11) and 32-bit (1.5) shortlist forms translate alike", "[shortlist]") {
  const ModelConfig config = testing::WideConfig();
  for (Backend backend : testing::Backends()) {
    INFO("backend " << static_cast<int>(backend));
    Prepared compact(testing::ShortlistModelBytes(config, 5, DType::kI8, 0), LimitsFor(backend));
    Prepared wide(testing::ShortlistModelBytes(config, 5, DType::kI8, 0, /*wide_ids=*/true),
                  LimitsFor(backend));
    REQUIRE(compact.model.format_minor() == 11);
    REQUIRE(wide.model.format_minor() == 5);
    for (int beam : {1, 3}) {
      DecodingOptions options;
      options.beam_size = beam;
      const Output a = Translate(compact.session, 0, 3, options);
      const Output b = Translate(wide.session, 0, 3, options);
      CHECK(a.ids == b.ids);
      CHECK(a.lengths == b.lengths);
      CHECK(a.scores == b.scores);
    }
  }
}

TEST_CASE("use_shortlist = false translates as the model without a shortlist", "[shortlist]") {
  const ModelConfig config = testing::WideConfig();
  for (Backend backend : testing::Backends()) {
    const Case c{DType::kI8, 0};
    Prepared with(testing::ShortlistModelBytes(config, 9, c.dtype, c.group), LimitsFor(backend));
    Prepared without(testing::ModelBytes(config, 9, c.dtype, c.group), LimitsFor(backend));
    DecodingOptions options;
    options.beam_size = 3;
    const Output plain = Translate(without.session, 0, 3, options);
    options.use_shortlist = false;
    const Output off = Translate(with.session, 0, 3, options);
    CHECK(off.ids == plain.ids);
    CHECK(off.lengths == plain.lengths);
    CHECK(off.scores == plain.scores);
  }
}

TEST_CASE("the arena plan holds the shortlist's buffers", "[shortlist][arena]") {
  const ModelConfig config = testing::WideConfig();
  const testing::AlignedBytes with = testing::ShortlistModelBytes(config, 1, DType::kI8, 0);
  const testing::AlignedBytes without = testing::ModelBytes(config, 1, DType::kI8, 0);
  const Limits limits = LimitsFor(Backend::kReference);
  auto a = Session::RequiredArenaBytes(Model::Load(with.data(), with.size()).value(), limits);
  auto b = Session::RequiredArenaBytes(Model::Load(without.data(), without.size()).value(), limits);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // 3 sentences x min(40, 2 + 3 x 9 + 4) candidates, 3 counts, a bitmap of 40 bits and the
  // candidates' rows copied together (at most the 40 rows of the output weight).
  CHECK(a.value() > b.value());
}

}  // namespace
}  // namespace tern
