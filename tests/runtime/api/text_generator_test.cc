// tern::TextGenerator (tern.hpp) on decoder-only models with either tokenizer kind stored in the
// file: the prompt's ids (BOS as the tokenizer says), the same new ids as the id path, the text
// streamed in whole UTF-8 pieces equal to the tokens' bytes, log-probabilities equal to the
// log-softmax of the model's own logits (greedy and with a temperature), stop strings across
// token boundaries, EOS, special tokens, the callback stopping generation, and the errors.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "runtime/tokenizer/text_stream.h"
#include "runtime/tokenizer/text_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/utf8.h"
#include "tests/support/generator_fixture.h"
#include "tests/support/tokenizer_model.h"

namespace tern::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  REQUIRE(file.good());
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

convert::BpeTokenizerData Gpt2Tokenizer() {
  return convert::ParseTokenizerJson(
      ReadFile(std::string(TERN_FIXTURES) + "/tokenizer/bpe_gpt2/tokenizer.json"),
      "tokenizer.json");
}

std::vector<uint8_t> SentencePieceBytes() {
  const std::string s = ReadFile(std::string(TERN_FIXTURES) + "/tokenizer/spm_llama.model");
  return std::vector<uint8_t>(s.begin(), s.end());
}

Limits SmallLimits() {
  Limits limits;
  limits.max_target_length = 48;
  limits.max_source_length = 48;
  return limits;
}

struct Recorder {
  std::vector<std::string> pieces;
  std::vector<int32_t> tokens;
  std::vector<float> log_probs;
  size_t stop_after = 0;  // > 0: return false at this many calls
};

bool Record(void* user, const TextPiece& piece) {
  auto* r = static_cast<Recorder*>(user);
  r->pieces.emplace_back(piece.text, piece.size);
  r->tokens.push_back(piece.token);
  r->log_probs.push_back(piece.log_prob);
  return r->stop_after == 0 || r->pieces.size() < r->stop_after;
}

std::string Joined(const Recorder& r) {
  std::string s;
  for (const std::string& p : r.pieces) s += p;
  return s;
}

std::string Text(const TextGenerator& t) { return std::string(t.text().data(), t.text().size()); }
std::vector<int32_t> Ids(const TextGenerator& t) {
  return std::vector<int32_t>(t.ids().data(), t.ids().data() + t.ids().size());
}

// The continuation as the tokens' bytes, each ill-formed byte as U+FFFD: what streaming must
// give when no stop string cuts it.
std::string ExpectedText(TextTokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string bytes;
  for (int32_t id : ids) {
    Span<const uint8_t> b;
    REQUIRE(tokenizer.TokenBytes(id, false, &b).ok());
    bytes.append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  std::string text;
  AppendValidUtf8(bytes.data(), bytes.size(), &text);
  return text;
}

// log softmax(logits / t)[token] in double from the model's own logits, step by step.
std::vector<double> ReferenceLogProbs(Generator& generator, const std::vector<int32_t>& prompt,
                                      const std::vector<int32_t>& ids, double t) {
  DecoderOnly& model = internal::decoder_only(generator);
  const int32_t length = static_cast<int32_t>(prompt.size());
  const float* logits = nullptr;
  REQUIRE(model.Prefill(prompt.data(), length, &length, 1, &logits).ok());
  std::vector<double> out;
  for (int32_t id : ids) {
    double max = -INFINITY;
    for (int32_t i = 0; i < model.vocab_size(); ++i) max = std::max(max, double{logits[i]} / t);
    double total = 0.0;
    for (int32_t i = 0; i < model.vocab_size(); ++i) total += std::exp(logits[i] / t - max);
    out.push_back(logits[id] / t - max - std::log(total));
    REQUIRE(model.DecodeStep(&id, &logits).ok());
  }
  return out;
}

TEST_CASE("text generation with a byte-level BPE model: ids, text, pieces, log-probs",
          "[text][api]") {
  const convert::BpeTokenizerData bpe = Gpt2Tokenizer();
  for (Backend backend : Backends()) {
    INFO((backend == Backend::kReference ? "reference" : "xnnpack"));
    PreparedGenerator lm;
    Limits limits = SmallLimits();
    limits.backend = backend;
    PrepareGenerator(&lm, LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3), limits);
    TextGenerator text;
    REQUIRE(text.Load(lm.model).ok());
    CHECK(std::string(text.tokenizer_kind()) == "byte-level BPE");
    TextTokenizer tokenizer;
    REQUIRE(tokenizer.Load(lm.model).ok());

    for (float temperature : {0.0f, 0.7f}) {
      INFO("temperature " << temperature);
      Recorder r;
      TextGenerationOptions o;
      o.generation.max_new_tokens = 16;
      o.generation.stop_at_eos = false;
      o.generation.sampling.temperature = temperature;
      o.generation.sampling.seed = 5;
      o.on_text = Record;
      o.user = &r;
      TextResult result;
      const std::string prompt = "Der Bahnhof 日本";
      const Status s = text.Generate(lm.generator, prompt.c_str(), o, &result);
      INFO(s.message());
      REQUIRE(s.ok());
      CHECK(result.finish == FinishReason::kLength);
      CHECK(result.new_tokens == 16);

      // The prompt is the tokenizer's encoding (GPT-2's tokenizer.json adds no BOS).
      std::vector<int32_t> expected_prompt;
      REQUIRE(
          tokenizer.EncodePrompt(prompt.data(), prompt.size(), true, true, &expected_prompt).ok());
      CHECK(std::vector<int32_t>(text.prompt_ids().data(),
                                 text.prompt_ids().data() + text.prompt_ids().size()) ==
            expected_prompt);
      // The same new ids as the id path with the same options.
      std::vector<int32_t> ids(16);
      std::vector<float> log_probs(16);
      size_t produced = 0;
      REQUIRE(lm.generator
                  .Generate(Span<const int32_t>(expected_prompt.data(), expected_prompt.size()),
                            Span<int32_t>(ids.data(), ids.size()), &produced, o.generation,
                            Span<float>(log_probs.data(), log_probs.size()))
                  .ok());
      CHECK(Ids(text) == ids);
      // One callback per token, in order, then possibly one with -1; each piece whole UTF-8; the
      // pieces are the text, which is the tokens' bytes.
      REQUIRE(r.tokens.size() >= 16);
      CHECK(std::vector<int32_t>(r.tokens.begin(), r.tokens.begin() + 16) == ids);
      for (const std::string& p : r.pieces) CHECK(FindInvalidUtf8(p.data(), p.size()) < 0);
      CHECK(Joined(r) == Text(text));
      CHECK(Text(text) == ExpectedText(tokenizer, ids));
      // Log-probabilities: the log-softmax of the model's logits under the temperature.
      const std::vector<double> reference = ReferenceLogProbs(lm.generator, expected_prompt, ids,
                                                              temperature > 0 ? temperature : 1.0);
      for (size_t i = 0; i < 16; ++i) {
        CHECK(std::fabs(text.log_probs()[i] - reference[i]) < 1e-4);
        CHECK(log_probs[i] == text.log_probs()[i]);
        CHECK(r.log_probs[i] == text.log_probs()[i]);
      }
    }
  }
}

TEST_CASE("a stop string across token boundaries ends the text before it", "[text][api]") {
  const convert::BpeTokenizerData bpe = Gpt2Tokenizer();
  PreparedGenerator lm;
  PrepareGenerator(&lm, LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3), SmallLimits());
  TextGenerator text;
  REQUIRE(text.Load(lm.model).ok());
  Recorder free_run;
  TextGenerationOptions o;
  o.generation.max_new_tokens = 24;
  o.generation.stop_at_eos = false;
  o.on_text = Record;
  o.user = &free_run;
  TextResult result;
  REQUIRE(text.Generate(lm.generator, "Hello world", o, &result).ok());
  const std::string full = Text(text);
  // A stop string made of the last character of one piece and the first of the next.
  std::string stop;
  size_t boundary_token = 0;
  for (size_t k = 0; k + 1 < free_run.pieces.size() && stop.empty(); ++k) {
    const std::string& a = free_run.pieces[k];
    const std::string& b = free_run.pieces[k + 1];
    if (a.empty() || b.empty()) continue;
    size_t last = a.size() - 1;
    while (last > 0 && (static_cast<unsigned char>(a[last]) & 0xC0) == 0x80) --last;
    size_t first_length = 1;
    while (first_length < b.size() && (static_cast<unsigned char>(b[first_length]) & 0xC0) == 0x80)
      ++first_length;
    stop = a.substr(last) + b.substr(0, first_length);
    boundary_token = k + 1;
  }
  REQUIRE_FALSE(stop.empty());
  INFO("stop \"" << stop << "\" in \"" << full << "\"");
  const size_t at = full.find(stop);
  REQUIRE(at != std::string::npos);

  Recorder r;
  o.user = &r;
  const char* stops[] = {"never in this text \x01", stop.c_str()};
  o.stop = stops;
  o.stop_count = 2;
  REQUIRE(text.Generate(lm.generator, "Hello world", o, &result).ok());
  CHECK(result.finish == FinishReason::kStopString);
  CHECK(Text(text) == full.substr(0, at));
  CHECK(Joined(r) == Text(text));
  // Generation ended at the token that completed the stop string (no later callback).
  CHECK(r.tokens.back() != -1);
  CHECK(result.new_tokens <= boundary_token + 1);
  CHECK(text.ids().size() == result.new_tokens);
}

TEST_CASE("EOS ends text generation unless ignored; special tokens print only when asked",
          "[text][api]") {
  const convert::BpeTokenizerData bpe = Gpt2Tokenizer();
  TextGenerationOptions o;
  o.generation.max_new_tokens = 12;
  o.generation.stop_at_eos = false;
  TextResult result;
  std::vector<int32_t> free_ids;
  {
    PreparedGenerator lm;
    PrepareGenerator(&lm, LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3), SmallLimits());
    TextGenerator text;
    REQUIRE(text.Load(lm.model).ok());
    REQUIRE(text.Generate(lm.generator, "Hello", o, &result).ok());
    free_ids = Ids(text);
  }
  // The same weights with EOS = a token the model generates after at least one other.
  size_t k = 1;
  while (k < free_ids.size() &&
         std::find(free_ids.begin(), free_ids.begin() + static_cast<std::ptrdiff_t>(k),
                   free_ids[k]) != free_ids.begin() + static_cast<std::ptrdiff_t>(k))
    ++k;
  REQUIRE(k < free_ids.size());
  PreparedGenerator lm;
  PrepareGenerator(&lm, LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3, free_ids[k]),
                   SmallLimits());
  TextGenerator text;
  REQUIRE(text.Load(lm.model).ok());
  o.generation.stop_at_eos = true;
  REQUIRE(text.Generate(lm.generator, "Hello", o, &result).ok());
  CHECK(result.finish == FinishReason::kEos);
  CHECK(Ids(text) ==
        std::vector<int32_t>(free_ids.begin(), free_ids.begin() + static_cast<std::ptrdiff_t>(k)));
  o.generation.stop_at_eos = false;
  REQUIRE(text.Generate(lm.generator, "Hello", o, &result).ok());
  CHECK(result.finish == FinishReason::kLength);
  CHECK(Ids(text) == free_ids);

  // <|endoftext|> (1499) is special: no bytes unless print_special; in a prompt it is that
  // token unless parse_special is off.
  TextTokenizer tokenizer;
  REQUIRE(tokenizer.Load(lm.model).ok());
  Span<const uint8_t> bytes;
  REQUIRE(tokenizer.TokenBytes(1499, false, &bytes).ok());
  CHECK(bytes.empty());
  REQUIRE(tokenizer.TokenBytes(1499, true, &bytes).ok());
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) == "<|endoftext|>");
  std::vector<int32_t> ids;
  REQUIRE(tokenizer.EncodePrompt("a<|endoftext|>", 14, true, true, &ids).ok());
  CHECK(ids.back() == 1499);
  REQUIRE(tokenizer.EncodePrompt("a<|endoftext|>", 14, true, false, &ids).ok());
  CHECK(ids.size() > 2);
  CHECK(std::find(ids.begin(), ids.end(), 1499) == ids.end());
}

TEST_CASE("text generation with a SentencePiece model: BOS, pieces, byte pieces", "[text][api]") {
  const std::vector<uint8_t> spm = SentencePieceBytes();
  PreparedGenerator lm;
  PrepareGenerator(&lm, LanguageModelWithTokenizer(nullptr, spm, 1000, 9, 2), SmallLimits());
  TextGenerator text;
  REQUIRE(text.Load(lm.model).ok());
  CHECK(std::string(text.tokenizer_kind()) == "SentencePiece");
  Tokenizer sentencepiece;
  REQUIRE(sentencepiece.Load(Span<const uint8_t>(spm.data(), spm.size())).ok());
  std::vector<int32_t> plain;
  REQUIRE(sentencepiece.Encode("Der Bahnhof ꙮ", false, 0, &plain).ok());

  Recorder r;
  TextGenerationOptions o;
  o.generation.max_new_tokens = 20;
  o.generation.stop_at_eos = false;
  o.on_text = Record;
  o.user = &r;
  TextResult result;
  REQUIRE(text.Generate(lm.generator, "Der Bahnhof ꙮ", o, &result).ok());
  std::vector<int32_t> with_bos = {1};
  with_bos.insert(with_bos.end(), plain.begin(), plain.end());
  CHECK(std::vector<int32_t>(text.prompt_ids().data(),
                             text.prompt_ids().data() + text.prompt_ids().size()) == with_bos);
  TextTokenizer tokenizer;
  REQUIRE(tokenizer.Load(lm.model).ok());
  for (const std::string& p : r.pieces) CHECK(FindInvalidUtf8(p.data(), p.size()) < 0);
  CHECK(Joined(r) == Text(text));
  CHECK(Text(text) == ExpectedText(tokenizer, Ids(text)));

  o.add_special_tokens = false;
  REQUIRE(text.Generate(lm.generator, "Der Bahnhof ꙮ", o, &result).ok());
  CHECK(std::vector<int32_t>(text.prompt_ids().data(),
                             text.prompt_ids().data() + text.prompt_ids().size()) == plain);

  // Pieces: U+2581 is a space, <0xEA> the byte, </s> nothing unless printed.
  auto piece = [&](int32_t id, bool special) {
    Span<const uint8_t> b;
    REQUIRE(tokenizer.TokenBytes(id, special, &b).ok());
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  // ꙮ (EA 99 AE) is outside the model's characters: three byte pieces.
  REQUIRE(plain.size() >= 3);
  CHECK(piece(plain[plain.size() - 3], false) == "\xEA");
  CHECK(piece(plain[plain.size() - 1], false) == "\xAE");
  CHECK(piece(plain[0], false).substr(0, 1) == " ");  // "▁D..." with the dummy prefix
  CHECK(piece(2, false).empty());
  CHECK(piece(2, true) == "</s>");
}

TEST_CASE("the text callback can stop generation; errors name the problem", "[text][api]") {
  const convert::BpeTokenizerData bpe = Gpt2Tokenizer();
  PreparedGenerator lm;
  PrepareGenerator(&lm, LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3), SmallLimits());
  TextGenerator text;
  TextResult result;
  TextGenerationOptions o;
  o.generation.stop_at_eos = false;
  o.generation.max_new_tokens = 10;
  CHECK(text.Generate(lm.generator, "x", o, &result).code() == StatusCode::kFailedPrecondition);
  REQUIRE(text.Load(lm.model).ok());

  Recorder r;
  r.stop_after = 3;
  o.on_text = Record;
  o.user = &r;
  REQUIRE(text.Generate(lm.generator, "Hello", o, &result).ok());
  CHECK(result.finish == FinishReason::kCallback);
  CHECK(r.pieces.size() == 3);
  CHECK(result.new_tokens == 3);
  CHECK(Joined(r) == Text(text));

  o.on_text = nullptr;
  const char* empty[] = {""};
  o.stop = empty;
  o.stop_count = 1;
  CHECK(text.Generate(lm.generator, "Hello", o, &result).code() == StatusCode::kInvalidArgument);
  o.stop_count = 0;
  o.generation.on_token = [](void*, int32_t, int32_t, int32_t) { return true; };
  CHECK(text.Generate(lm.generator, "Hello", o, &result).code() == StatusCode::kInvalidArgument);
  o.generation.on_token = nullptr;
  const Status invalid = text.Generate(lm.generator, "a\xFF", 2, o, &result);
  CHECK(invalid.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(invalid.message()).find("byte 1") != std::string::npos);

  // A model without a tokenizer.
  PreparedGenerator bare;
  PrepareGenerator(&bare, LanguageModelWithTokenizer(nullptr, {}, 50, 3), SmallLimits());
  TextGenerator none;
  const Status s = none.Load(bare.model);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(s.message()).find("no tokenizer") != std::string::npos);
}

}  // namespace
}  // namespace tern::testing
