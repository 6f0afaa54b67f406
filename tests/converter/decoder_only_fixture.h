// Test support for the decoder-only architecture fixtures (tests/fixtures/checkpoints/gpt2 and
// llama, made by tools/fixtures/make_{gpt2,llama}_fixture.py): their expected.safetensors, a
// converted fixture prepared as a Generator, and the checks against PyTorch's logits and greedy
// continuations. Header-only, for Catch2 test files (it REQUIREs and CHECKs).
#pragma once

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/readers/safetensors.h"
#include "runtime/api/session_internal.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/support/generator_fixture.h"

namespace tern::testing {

// A fixture's expected.safetensors.
struct LmExpected {
  int64_t batch = 0, prompt_stride = 0, max_new = 0, seq = 0, vocab = 0;
  std::vector<int32_t> prompts, prompt_lengths, greedy, greedy_lengths;
  std::vector<float> logits;  // [batch, seq, vocab] over prompt + greedy continuation

  // Sequence b alone, as a batch of one.
  LmExpected Row(int64_t b) const {
    LmExpected e = *this;
    e.batch = 1;
    e.prompts.assign(prompts.begin() + b * prompt_stride,
                     prompts.begin() + (b + 1) * prompt_stride);
    e.prompt_lengths = {prompt_lengths[b]};
    e.greedy.assign(greedy.begin() + b * max_new, greedy.begin() + (b + 1) * max_new);
    e.greedy_lengths = {greedy_lengths[b]};
    e.logits.assign(logits.begin() + b * seq * vocab, logits.begin() + (b + 1) * seq * vocab);
    return e;
  }
  // Sequence b's greedy continuation.
  std::vector<int32_t> Greedy(int64_t b) const {
    return std::vector<int32_t>(greedy.begin() + b * max_new,
                                greedy.begin() + b * max_new + greedy_lengths[b]);
  }
};

// `relative` below tests/fixtures/checkpoints, e.g. "gpt2/expected.safetensors".
inline LmExpected LoadLmExpected(const std::string& relative) {
  const convert::SafetensorsFile f = convert::SafetensorsFile::Read(CheckpointFixture(relative));
  auto ints = [&](const std::string& name) { return Int32s(f, name); };
  LmExpected e;
  e.prompts = ints("prompt_ids");
  e.prompt_lengths = ints("prompt_lengths");
  e.greedy = ints("greedy_ids");
  e.greedy_lengths = ints("greedy_lengths");
  e.logits = f.Float("logits").values;
  e.batch = f.entries().at("prompt_ids").shape[0];
  e.prompt_stride = f.entries().at("prompt_ids").shape[1];
  e.max_new = f.entries().at("greedy_ids").shape[1];
  e.seq = f.entries().at("logits").shape[1];
  e.vocab = f.entries().at("logits").shape[2];
  return e;
}

// Converts with `options` and prepares a generator for `batch` sequences of e's lengths.
inline void PrepareConverted(PreparedGenerator* p, const convert::ConvertOptions& options,
                             Backend backend, int32_t batch, const LmExpected& e) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = batch;
  limits.max_source_length = static_cast<int32_t>(e.prompt_stride);
  limits.max_target_length = static_cast<int32_t>(e.seq);
  PrepareGenerator(p, AlignedBytes(convert::SerializeModel(convert::BuildContents(options))),
                   limits);
}

// Largest |logit - expected| at every position of prompt + greedy continuation of every sequence,
// run as one batch: prefill, then teacher-forced steps (a finished sequence is kFinished).
inline float LogitError(DecoderOnly& m, const LmExpected& e) {
  float worst = 0.0f;
  auto compare = [&](const float* logits, int64_t b, int64_t position) {
    for (int64_t v = 0; v < e.vocab; ++v) {
      worst = std::max(worst, std::fabs(logits[b * e.vocab + v] -
                                        e.logits[(b * e.seq + position) * e.vocab + v]));
    }
  };
  const float* logits = nullptr;
  REQUIRE(m.Prefill(e.prompts.data(), e.prompt_stride, e.prompt_lengths.data(),
                    static_cast<int32_t>(e.batch), &logits)
              .ok());
  for (int64_t b = 0; b < e.batch; ++b) compare(logits, b, e.prompt_lengths[b] - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(e.batch));
  for (int64_t step = 0; step < e.max_new; ++step) {
    // Step `step` appends greedy token `step` (position prompt + step) of every sequence that has
    // one; the logits that follow are the expected ones at that position.
    bool any = false;
    for (int64_t b = 0; b < e.batch; ++b) {
      tokens[b] =
          step < e.greedy_lengths[b] ? e.greedy[b * e.max_new + step] : DecoderOnly::kFinished;
      any = any || tokens[b] != DecoderOnly::kFinished;
    }
    if (!any) break;
    const Status s = m.DecodeStep(tokens.data(), &logits);
    INFO(s.message());
    REQUIRE(s.ok());
    for (int64_t b = 0; b < e.batch; ++b) {
      if (tokens[b] != DecoderOnly::kFinished) compare(logits, b, e.prompt_lengths[b] + step);
    }
  }
  return worst;
}

// Greedy continuations equal PyTorch's: each prompt alone, then the whole batch at once.
inline void CheckGreedy(Generator& g, const LmExpected& e) {
  GenerationOptions options;
  options.max_new_tokens = static_cast<int32_t>(e.max_new);
  std::vector<int32_t> out(static_cast<size_t>(e.batch * e.max_new)),
      lengths(static_cast<size_t>(e.batch));
  for (int64_t b = 0; b < e.batch; ++b) {
    size_t n = 0;
    REQUIRE(g.Generate(Span<const int32_t>(e.prompts.data() + b * e.prompt_stride,
                                           static_cast<size_t>(e.prompt_lengths[b])),
                       Span<int32_t>(out.data(), static_cast<size_t>(e.max_new)), &n, options)
                .ok());
    CHECK(std::vector<int32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n)) ==
          e.Greedy(b));
  }
  REQUIRE(g.Generate(e.prompts.data(), e.prompt_stride, e.prompt_lengths.data(),
                     static_cast<int32_t>(e.batch), options, out.data(), e.max_new, lengths.data())
              .ok());
  for (int64_t b = 0; b < e.batch; ++b) {
    INFO("batch row " << b);
    CHECK(std::vector<int32_t>(out.begin() + b * e.max_new,
                               out.begin() + b * e.max_new + lengths[b]) == e.Greedy(b));
  }
}

// A quantized conversion (g prepared for one sequence): the first prompt's logits differ from
// PyTorch's f32 ones, by less than max_error, and sampling from it gives 8 tokens.
inline void CheckQuantized(Generator& g, const LmExpected& e, float max_error) {
  const float error = LogitError(tern::internal::decoder_only(g), e.Row(0));
  CHECK(error > 0.0f);  // really quantized
  CHECK(error < max_error);
  std::vector<int32_t> out(8);
  size_t n = 0;
  GenerationOptions options;
  options.stop_at_eos = false;
  options.sampling.temperature = 0.8f;
  options.sampling.top_k = 10;
  options.sampling.seed = 4;
  REQUIRE(
      g.Generate(Span<const int32_t>(e.prompts.data(), static_cast<size_t>(e.prompt_lengths[0])),
                 Span<int32_t>(out.data(), out.size()), &n, options)
          .ok());
  CHECK(n == 8);
}

}  // namespace tern::testing
