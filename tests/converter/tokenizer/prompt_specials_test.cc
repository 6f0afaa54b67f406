// A language model's prompt specials from tokenizer_config.json (converter/tokenizer/
// prompt_specials.h): add_bos_token / add_eos_token for a SentencePiece model (stored as
// SentencePieceSpecials, format 1.10, only when not the default) and for a byte-level BPE
// tokenizer (prefix_ids / suffix_ids), each refusal by its exact message, and the loader's checks
// of the new kind.
#include "converter/tokenizer/prompt_specials.h"

#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/error.h"
#include "converter/writer.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/text_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;

const std::string kFixtures = TERN_FIXTURES;

std::string ThrownBy(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// tokenizer_config.json with `body` in a scratch directory, read back.
TokenizerConfig ConfigOf(const ScratchDir& dir, const std::string& body) {
  WriteBytes(dir / "tokenizer_config.json", body);
  return ReadTokenizerConfig(dir.path);
}

Tokenizer LlamaSpm() {
  const std::string bytes = ReadBytes(kFixtures + "/tokenizer/spm_llama.model");
  Tokenizer t;
  REQUIRE(t.Load(Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
              .ok());
  REQUIRE(t.bos_id() == 1);
  REQUIRE(t.eos_id() == 2);
  return t;
}

TEST_CASE("prompt specials: tokenizer_config.json's fields, and their wrong types by name") {
  ScratchDir dir;
  CHECK(ReadTokenizerConfig(dir.path).path.empty());  // no file: nothing read
  const TokenizerConfig c =
      ConfigOf(dir, R"({"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false,
               "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
               "eos_token": "</s>"})");
  CHECK(c.path == dir / "tokenizer_config.json");
  CHECK(c.tokenizer_class == "LlamaTokenizerFast");
  CHECK(c.add_bos_token == std::optional<bool>(false));
  CHECK_FALSE(c.add_eos_token.has_value());
  CHECK(c.bos_token == std::optional<std::string>("<s>"));
  CHECK(c.eos_token == std::optional<std::string>("</s>"));
  CHECK_FALSE(ConfigOf(dir, R"({"bos_token": null})").bos_token.has_value());
  const std::string path = dir / "tokenizer_config.json";
  CHECK(ThrownBy([&] { ConfigOf(dir, R"({"add_eos_token": "yes"})"); }) ==
        path + ": add_eos_token is not true or false");
  CHECK(ThrownBy([&] { ConfigOf(dir, R"({"bos_token": 1})"); }) ==
        path + ": bos_token is neither a string nor an object with a \"content\" string");
  CHECK(ThrownBy([&] { ConfigOf(dir, "[]"); }) == path + ": not a JSON object");
}

TEST_CASE("prompt specials: a SentencePiece model follows LlamaTokenizer's add_bos / add_eos") {
  ScratchDir dir;
  const Tokenizer spm = LlamaSpm();
  std::vector<std::string> notes;
  auto specials = [&](const std::string& body) {
    notes.clear();
    return SentencePiecePromptSpecials(ConfigOf(dir, body), spm, "m.model", &notes);
  };
  PromptSpecials s = SentencePiecePromptSpecials(TokenizerConfig{}, spm, "m.model", &notes);
  CHECK((s.add_bos && !s.add_eos));  // no tokenizer_config.json: the default
  s = specials(R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>"})");
  CHECK((s.add_bos && !s.add_eos));
  CHECK(notes.empty());
  s = specials(R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "</s>"})");
  CHECK((!s.add_bos && s.add_eos));
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == dir / "tokenizer_config.json" +
                        ": add_bos_token false, add_eos_token true: a prompt gets no BOS before "
                        "and EOS after (format 1.10)");
  const std::string path = dir / "tokenizer_config.json";
  CHECK(ThrownBy([&] { specials(R"({"bos_token": "<bos>"})"); }) ==
        path + ": bos_token \"<bos>\" is not m.model's piece \"<s>\" (id 1)");
  CHECK(ThrownBy([&] { specials(R"({"add_eos_token": true, "eos_token": "<eos>"})"); }) ==
        path + ": eos_token \"<eos>\" is not m.model's piece \"</s>\" (id 2)");
  // A token that is not added does not need to match.
  CHECK_FALSE(specials(R"({"add_bos_token": false, "bos_token": "<bos>"})").add_bos);
}

BpeTokenizerData Llama3Bpe() {
  return ReadTokenizerJson(kFixtures + "/tokenizer/bpe_llama3/tokenizer.json");
}

TEST_CASE("prompt specials: Llama / Gemma classes rewrite a byte-level BPE's post-processor") {
  ScratchDir dir;
  std::vector<std::string> notes;
  BpeTokenizerData d = Llama3Bpe();
  REQUIRE(d.prefix_ids == std::vector<int32_t>{1993});  // TemplateProcessing's <|begin_of_text|>
  REQUIRE(d.suffix_ids.empty());
  const char* classes[] = {"LlamaTokenizerFast", "LlamaTokenizer", "GemmaTokenizerFast",
                           "CodeLlamaTokenizerFast"};
  for (const char* cls : classes) {
    CAPTURE(cls);
    d = Llama3Bpe();
    notes.clear();
    ApplyPromptSpecials(ConfigOf(dir, std::string(R"({"tokenizer_class": ")") + cls +
                                          R"(", "add_bos_token": false, "add_eos_token": true,
                              "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"})"),
                        "t.json", &d, &notes);
    CHECK(d.prefix_ids.empty());
    CHECK(d.suffix_ids == std::vector<int32_t>{1994});
    REQUIRE(notes.size() == 1);
    CHECK(notes[0] == dir / "tokenizer_config.json" + ": tokenizer_class " + cls +
                          " with add_bos_token false, add_eos_token true replaces the "
                          "post-processor's [1993] before and [] after a text with [] and [1994]");
  }
  // The defaults (BOS only) with this tokenizer's own BOS: nothing changes, nothing said.
  d = Llama3Bpe();
  notes.clear();
  ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "LlamaTokenizerFast",
                                        "bos_token": "<|begin_of_text|>"})"),
                      "t.json", &d, &notes);
  CHECK(d.prefix_ids == std::vector<int32_t>{1993});
  CHECK(notes.empty());
  // A plain vocabulary token (not an added one) is found by its bytes.
  d = Llama3Bpe();
  ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "LlamaTokenizerFast",
                                        "bos_token": "a"})"),
                      "t.json", &d, &notes);
  REQUIRE(d.prefix_ids.size() == 1);
  CHECK(d.token_bytes[d.prefix_ids[0]] == "a");
  const std::string path = dir / "tokenizer_config.json";
  const char* hint = " (--no-tokenizer converts without a tokenizer)";
  d = Llama3Bpe();
  CHECK(ThrownBy([&] {
          ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "LlamaTokenizerFast"})"),
                              "t.json", &d, &notes);
        }) == path + ": add_bos_token is true but bos_token is not set" + hint);
  CHECK(ThrownBy([&] {
          ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "GemmaTokenizer",
                                                 "bos_token": "<bos>"})"),
                              "t.json", &d, &notes);
        }) == path + ": bos_token \"<bos>\" is no token of t.json" + hint);
}

TEST_CASE("prompt specials: another class's flags must agree with the post-processor") {
  ScratchDir dir;
  std::vector<std::string> notes;
  const std::string path = dir / "tokenizer_config.json";
  BpeTokenizerData d = Llama3Bpe();
  // Agreeing flags, or none: the post-processor stays.
  for (const char* body : {R"({"tokenizer_class": "PreTrainedTokenizerFast"})",
                           R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": true,
            "add_eos_token": false, "bos_token": "<|begin_of_text|>",
            "eos_token": "<|end_of_text|>"})",
                           R"({"add_eos_token": false})"}) {
    CAPTURE(body);
    ApplyPromptSpecials(ConfigOf(dir, body), "t.json", &d, &notes);
    CHECK(d.prefix_ids == std::vector<int32_t>{1993});
    CHECK(d.suffix_ids.empty());
  }
  CHECK(ThrownBy([&] {
          ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "PreTrainedTokenizerFast",
                                "add_bos_token": false, "bos_token": "<|begin_of_text|>"})"),
                              "t.json", &d, &notes);
        }) == path +
                  ": add_bos_token is false, but t.json's post-processor puts [1993] before a "
                  "text (bos_token \"<|begin_of_text|>\" is id 1993), and tokenizer_class "
                  "\"PreTrainedTokenizerFast\" is not one whose flags transformers applies for "
                  "certain (Llama, CodeLlama, Gemma); make the two files agree (--no-tokenizer "
                  "converts without a tokenizer)");
  CHECK(ThrownBy([&] {
          ApplyPromptSpecials(ConfigOf(dir, R"({"tokenizer_class": "GPT2Tokenizer",
                                                 "add_eos_token": true})"),
                              "t.json", &d, &notes);
        }) == path +
                  ": add_eos_token is true, but t.json's post-processor puts [] after a text (no "
                  "eos_token), and tokenizer_class \"GPT2Tokenizer\" is not one whose flags "
                  "transformers applies for certain (Llama, CodeLlama, Gemma); make the two "
                  "files agree (--no-tokenizer converts without a tokenizer)");
}

// The file's bytes loaded from 64-byte aligned storage.
Result<Model> LoadSerialized(const std::vector<uint8_t>& bytes, std::vector<uint8_t>* storage) {
  storage->assign(bytes.size() + 64, 0);
  uint8_t* base = storage->data() + (64 - reinterpret_cast<uintptr_t>(storage->data()) % 64) % 64;
  std::memcpy(base, bytes.data(), bytes.size());
  return Model::Load(base, bytes.size());
}

// A converted fixture's contents with the SentencePiece fixture as its tokenizer (the loader
// does not compare the tokenizer's pieces with the vocabulary; the converter does).
TernContents ContentsWithSpm(const std::string& checkpoint, const std::string& arch) {
  ConvertOptions o;
  o.checkpoint = testing::CheckpointFixture(checkpoint);
  o.arch = arch;
  o.no_tokenizer = true;
  TernContents c = BuildContents(o);
  const std::string spm = ReadBytes(kFixtures + "/tokenizer/spm_llama.model");
  c.source_tokenizer.assign(spm.begin(), spm.end());
  return c;
}

TernContents LanguageModelContents() { return ContentsWithSpm("llama/model.safetensors", "llama"); }

TEST_CASE("prompt specials: stored as SentencePieceSpecials (1.10) only when not the default") {
  TernContents c = LanguageModelContents();
  std::vector<uint8_t> storage;
  {
    const auto m = LoadSerialized(SerializeModel(c), &storage);
    REQUIRE(m.ok());
    CHECK(m.value().format_minor() < 10);  // BOS only: the SentencePiece kind, as before
    CHECK((m.value().prompt_specials().add_bos && !m.value().prompt_specials().add_eos));
  }
  c.prompt_add_bos = false;
  c.prompt_add_eos = true;
  CHECK(FormatMinor(c) == 10);
  const auto m = LoadSerialized(SerializeModel(c), &storage);
  REQUIRE(m.ok());
  CHECK(m.value().format_minor() == 10);
  CHECK((!m.value().prompt_specials().add_bos && m.value().prompt_specials().add_eos));
  CHECK(m.value().source_tokenizer().size() == c.source_tokenizer.size());
  // The text path: no BOS before, EOS after, and neither without special tokens.
  TextTokenizer text;
  REQUIRE(text.Load(m.value()).ok());
  std::vector<int32_t> with, without;
  REQUIRE(text.EncodePrompt("Der Bahnhof", 11, true, false, &with).ok());
  REQUIRE(text.EncodePrompt("Der Bahnhof", 11, false, false, &without).ok());
  REQUIRE_FALSE(without.empty());
  CHECK(without.front() != 1);
  std::vector<int32_t> expected = without;
  expected.push_back(2);
  CHECK(with == expected);
}

TEST_CASE("prompt specials: the loader refuses SentencePieceSpecials outside a language model") {
  TernContents c = ContentsWithSpm("marian/pytorch_model.bin", "marian");
  c.prompt_add_bos = false;
  std::vector<uint8_t> storage;
  const auto m = LoadSerialized(SerializeModel(c), &storage);
  REQUIRE_FALSE(m.ok());
  CHECK(std::string(m.status().message()) ==
        "tokenizer: kind SentencePieceSpecials is for decoder-only models");
}

}  // namespace
}  // namespace tern::convert
