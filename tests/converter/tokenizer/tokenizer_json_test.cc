// tokenizer.json -> BpeTokenizerData: the forms that are read, and everything else refused
// with a message naming the field (never converted into a tokenizer that tokenizes otherwise).
#include "converter/tokenizer/tokenizer_json.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <string>

#include "converter/error.h"
#include "converter/tokenizer/byte_level.h"
#include "runtime/tokenizer/pre_tokenizer.h"
#include "tests/runtime/tokenizer/mini_tokenizer.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
using testing::MiniTokenizer;
using Step = bpe::PreTokenizerStep;

MiniTokenizer Base() {
  MiniTokenizer m;
  m.merges = {{"a", "b"}, {"Ġ", "ab"}};
  m.added = {{"<|endoftext|>"}};
  return m;
}

void ExpectRefused(const std::function<void(json*)>& change, const std::string& message) {
  json j = Base().Json();
  REQUIRE_NOTHROW(ParseTokenizerJson(j.dump(), "t.json"));
  change(&j);
  INFO(message);
  CHECK_THROWS_WITH(ParseTokenizerJson(j.dump(), "t.json"), ContainsSubstring(message));
}

TEST_CASE("byte-level mapping: printable bytes stand for themselves", "[tokenizer][convert]") {
  CHECK(ByteLevelEncode(" ") == "\xc4\xa0");   // Ġ
  CHECK(ByteLevelEncode("\n") == "\xc4\x8a");  // Ċ
  CHECK(ByteLevelEncode("a!~") == "a!~");
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    std::string back;
    REQUIRE(ByteLevelDecode(ByteLevelEncode(one), &back));
    CHECK(back == one);
  }
  std::string bytes;
  CHECK_FALSE(ByteLevelDecode("a b", &bytes));  // a real space stands for no byte
  CHECK(bytes == "a b");
  CHECK_FALSE(ByteLevelDecode("\xe6\x97\xa5", &bytes));
}

TEST_CASE("a tokenizer.json is read into per-id tables", "[tokenizer][convert]") {
  const BpeTokenizerData d = ParseTokenizerJson(Base().Text(), "t.json");
  CHECK(d.vocab_size() == 256 + 2 + 1);
  CHECK(d.token_bytes[256] == "ab");
  CHECK(d.token_bytes[257] == " ab");
  CHECK(d.token_bytes[258] == "<|endoftext|>");
  CHECK(d.byte_level[257]);
  CHECK_FALSE(d.byte_level[258]);  // an added token only: not a vocabulary entry
  REQUIRE(d.merges.size() == 2);
  CHECK(d.merges[1].left == d.byte_tokens[' ']);
  CHECK(d.merges[1].right == 256);
  CHECK(d.merges[1].result == 257);
  CHECK(d.merges[1].rank == 1);
  CHECK(d.pre_tokenizer == std::vector<uint8_t>{static_cast<uint8_t>(Step::kSplitGpt2)});
  CHECK(d.added_tokens.size() == 1);
  CHECK(d.added_tokens[0].special);
  CHECK_FALSE(d.added_tokens[0].normalized);
  CHECK_THAT(d.Describe(), ContainsSubstring("259 tokens (1 added), 2 merges"));
  // Merges written as [left, right] read the same as "left right".
  json pairs = Base().Json();
  pairs["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"Ġ", "ab"})});
  const BpeTokenizerData p = ParseTokenizerJson(pairs.dump(), "t.json");
  CHECK(p.merges[1].result == d.merges[1].result);
}

TEST_CASE("pre-tokenizer and post-processor forms", "[tokenizer][convert]") {
  const char* llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json j = Base().Json();
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "Split"},
         {"pattern", {{"Regex", llama3}}},
         {"behavior", "Isolated"},
         {"invert", false}},
        {{"type", "Digits"}, {"individual_digits", true}},
        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", false}}}}};
  j["post_processor"] = {{"type", "RobertaProcessing"},
                         {"cls", {"<|endoftext|>", 258}},
                         {"sep", {"a", 97}},
                         {"trim_offsets", true},
                         {"add_prefix_space", false}};
  BpeTokenizerData d = ParseTokenizerJson(j.dump(), "t.json");
  CHECK(d.pre_tokenizer == std::vector<uint8_t>{static_cast<uint8_t>(Step::kSplitLlama3),
                                                static_cast<uint8_t>(Step::kDigitsIndividual),
                                                static_cast<uint8_t>(Step::kPrefixSpace)});
  CHECK(d.prefix_ids == std::vector<int32_t>{258});
  CHECK(d.suffix_ids == std::vector<int32_t>{97});
  // Truncation and padding change no id: a note says they are not kept.
  j["truncation"] = {{"max_length", 512}};
  d = ParseTokenizerJson(j.dump(), "t.json");
  REQUIRE(d.notes.size() == 1);
  CHECK_THAT(d.notes[0], ContainsSubstring("truncation settings are not stored"));
}

TEST_CASE("the NFC normalizer; normalized added tokens are matched in NFC",
          "[tokenizer][convert]") {
  MiniTokenizer m = Base();
  m.normalizer = {{"type", "NFC"}};
  m.added.push_back({"e\xcc\x81!", false, false, false, /*normalized=*/true});
  m.added.push_back({"o\xcc\x81!", false, false, false, /*normalized=*/false});
  const BpeTokenizerData d = ParseTokenizerJson(m.Text(), "t.json");
  CHECK(d.nfc);
  CHECK_THAT(d.Describe(), ContainsSubstring("normalizer NFC"));
  REQUIRE(d.added_tokens.size() == 3);
  CHECK(d.added_tokens[1].content == "\xc3\xa9!");             // what the matcher looks for
  CHECK(d.added_tokens[2].content == "o\xcc\x81!");            // not normalized: as written
  CHECK(d.token_bytes[d.added_tokens[1].id] == "e\xcc\x81!");  // decoding: as written
  m.added.push_back({"\xc3\xa9!", false, false, false, true});
  CHECK_THROWS_WITH(ParseTokenizerJson(m.Text(), "t.json"),
                    ContainsSubstring("two tokens are \"é!\" after NFC"));
}

TEST_CASE("what tern does not implement is refused by name", "[tokenizer][convert]") {
  ExpectRefused([](json* j) { (*j)["model"]["type"] = "WordPiece"; },
                "t.json: model.type: \"WordPiece\" is not supported");
  ExpectRefused(
      [](json* j) {
        (*j)["normalizer"] = {{"type", "NFKC"}};
      },
      "normalizer.type: \"NFKC\" is not implemented");
  ExpectRefused(
      [](json* j) {
        (*j)["normalizer"] = {{"type", "Lowercase"}};
      },
      "normalizer.type: \"Lowercase\" is not implemented");
  ExpectRefused(
      [](json* j) {
        (*j)["normalizer"] = {{"type", "NFC"}, {"extra", 1}};
      },
      "normalizer: unknown field \"extra\"");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {{"type", "Whitespace"}};
      },
      "pre_tokenizer.type: \"Whitespace\" is not implemented");
  ExpectRefused([](json* j) { (*j)["pre_tokenizer"] = nullptr; }, "pre_tokenizer: null");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}}}}};
      },
      "no ByteLevel step");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "ByteLevel"}, {"add_prefix_space", false}}, {{"type", "Digits"}}}}};
      },
      "pre_tokenizer.pretokenizers[1]: \"Digits\" after ByteLevel");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {
            {"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}};
      },
      "pre_tokenizer.pattern.Regex: \"\\\\s+\" is not implemented");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {
            {"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "Isolated"}};
      },
      "pre_tokenizer.pattern: {\"String\":\" \"} is not implemented");
  ExpectRefused(
      [](json* j) {
        (*j)["pre_tokenizer"] = {
            {"type", "Split"},
            {"pattern",
             {{"Regex",
               R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"}}},
            {"behavior", "Removed"}};
      },
      "pre_tokenizer.behavior: \"Removed\" is not implemented");
  ExpectRefused([](json* j) { (*j)["pre_tokenizer"].erase("add_prefix_space"); },
                "no \"add_prefix_space\"");
  ExpectRefused(
      [](json* j) {
        (*j)["decoder"] = {{"type", "Metaspace"}};
      },
      "decoder.type: \"Metaspace\" is not implemented");
  ExpectRefused([](json* j) { (*j)["decoder"] = nullptr; }, "decoder: null");
  ExpectRefused(
      [](json* j) {
        (*j)["post_processor"] = {{"type", "Weird"}};
      },
      "post_processor.type: \"Weird\" is not implemented");
  ExpectRefused([](json* j) { (*j)["model"]["byte_fallback"] = true; }, "model.byte_fallback");
  ExpectRefused([](json* j) { (*j)["model"]["dropout"] = 0.1; }, "BPE dropout");
  ExpectRefused([](json* j) { (*j)["model"]["end_of_word_suffix"] = "</w>"; },
                "model.end_of_word_suffix: \"</w>\" is not implemented");
  ExpectRefused([](json* j) { (*j)["model"]["new_option"] = 1; },
                "model: unknown field \"new_option\"");
  ExpectRefused([](json* j) { (*j)["added_tokens"][0]["single_word"] = true; },
                "added_tokens[0].single_word: true is not implemented");
}

TEST_CASE("inconsistent vocabularies and merges are refused by name", "[tokenizer][convert]") {
  ExpectRefused([](json* j) { (*j)["model"]["merges"].push_back("a zz"); },
                "model.merges[2] \"a zz\": \"zz\" is not in model.vocab");
  ExpectRefused([](json* j) { (*j)["model"]["merges"].push_back("b a"); },
                "model.merges[2] \"b a\": its result \"ba\" is not in model.vocab");
  ExpectRefused([](json* j) { (*j)["model"]["merges"].push_back("a b"); }, "a second time");
  ExpectRefused([](json* j) { (*j)["model"]["merges"].push_back("a b c"); },
                "is not two tokens separated by one space");
  ExpectRefused([](json* j) { (*j)["model"]["vocab"].erase("Ġ"); },
                "model.vocab: id 32 is neither in model.vocab nor in added_tokens");
  ExpectRefused(
      [](json* j) {
        (*j)["model"]["vocab"].erase("Ġ");
        (*j)["model"]["vocab"]["zz"] = 32;
      },
      "no token for byte 0x20");
  ExpectRefused([](json* j) { (*j)["model"]["vocab"]["zz"] = 5; }, "both have id 5");
  ExpectRefused([](json* j) { (*j)["added_tokens"][0]["id"] = 256; },
                "has id 256, which model.vocab gives to \"ab\"");
  ExpectRefused([](json* j) { (*j)["added_tokens"][0]["content"] = "ab"; },
                "\"ab\" has id 258 but model.vocab gives it 256");
  ExpectRefused([](json* j) { (*j)["added_tokens"].push_back((*j)["added_tokens"][0]); },
                "two tokens have id 258");
  ExpectRefused([](json* j) { (*j)["model"]["vocab"]["x"] = -1; }, "expected a token id");
  ExpectRefused([](json* j) { *j = json::array(); }, "t.json: the file: expected an object");
  CHECK_THROWS_WITH(ParseTokenizerJson("{\"model\": ", "t.json"),
                    ContainsSubstring("t.json: not valid JSON"));
}

}  // namespace
}  // namespace tern::convert
