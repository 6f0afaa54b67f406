// The pre-tokenizer pipeline: Digits (individual, contiguous; every \p{N}), the prefix space,
// steps applied to the pieces of the steps before, and the checks of Init and Run.
#include "runtime/tokenizer/pre_tokenizer.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <string>
#include <vector>

namespace tern::bpe {
namespace {

using Catch::Matchers::ContainsSubstring;
using Pieces = std::vector<std::string>;
using Step = PreTokenizerStep;

class Collect final : public PieceSink {
 public:
  Status Piece(const uint8_t* data, size_t size) override {
    pieces.emplace_back(reinterpret_cast<const char*>(data), size);
    return Status::Ok();
  }
  Pieces pieces;
};

Pieces Run(std::vector<Step> steps, const std::string& text) {
  std::vector<uint8_t> raw;
  for (const Step step : steps) raw.push_back(static_cast<uint8_t>(step));
  PreTokenizer p;
  REQUIRE(p.Init(raw.data(), raw.size()).ok());
  std::vector<uint8_t> scratch(p.ScratchBytes(text.size()));
  Collect c;
  REQUIRE(p.Run(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                Span<uint8_t>(scratch.data(), scratch.size()), &c)
              .ok());
  return c.pieces;
}

TEST_CASE("Digits: every \\p{N} on its own, or in runs", "[tokenizer][pre]") {
  CHECK(Run({Step::kDigitsIndividual}, "a123b") == Pieces{"a", "1", "2", "3", "b"});
  CHECK(Run({Step::kDigitsContiguous}, "a123b45") == Pieces{"a", "123", "b", "45"});
  CHECK(Run({Step::kDigitsIndividual}, "12") == Pieces{"1", "2"});
  // One half, superscript two, Arabic-Indic three: numbers too (Rust's char::is_numeric).
  CHECK(Run({Step::kDigitsIndividual}, "x\xc2\xbd\xc2\xb2\xd9\xa3y") ==
        Pieces{"x", "\xc2\xbd", "\xc2\xb2", "\xd9\xa3", "y"});
  CHECK(Run({Step::kDigitsContiguous},
            "\xc2\xbd"
            "7 ") == Pieces{"\xc2\xbd"
                            "7",
                            " "});
}

TEST_CASE("the prefix space goes before every piece that lacks one", "[tokenizer][pre]") {
  CHECK(Run({Step::kPrefixSpace}, "abc") == Pieces{" abc"});
  CHECK(Run({Step::kPrefixSpace}, " abc") == Pieces{" abc"});
  CHECK(Run({Step::kPrefixSpace, Step::kSplitGpt2}, "Hello world") == Pieces{" Hello", " world"});
  // Each step runs on every piece of the one before it.
  CHECK(Run({Step::kDigitsIndividual, Step::kPrefixSpace, Step::kSplitGpt2}, "a1 b") ==
        Pieces{" a", " 1", " b"});
  CHECK(Run({Step::kSplitLlama3, Step::kDigitsIndividual}, "x 1234") ==
        Pieces{"x", " ", "1", "2", "3", "4"});
  CHECK(Run({}, "as is") == Pieces{"as is"});
  CHECK(Run({Step::kSplitGpt2}, "").empty());
}

TEST_CASE("Init refuses unknown steps and a second prefix space; Run needs its scratch",
          "[tokenizer][pre]") {
  PreTokenizer p;
  const uint8_t unknown[] = {0, 9};
  Status s = p.Init(unknown, 2);
  CHECK(s.code() == StatusCode::kInvalidModel);
  CHECK_THAT(s.message(), ContainsSubstring("step 1 is 9, which is unknown"));
  const uint8_t twice[] = {5, 0, 5};
  CHECK_THAT(p.Init(twice, 3).message(), ContainsSubstring("more than one prefix-space"));
  const uint8_t many[9] = {};
  CHECK_THAT(p.Init(many, 9).message(), ContainsSubstring("9 pre-tokenizer steps"));
  const uint8_t prefix[] = {5};
  REQUIRE(p.Init(prefix, 1).ok());
  CHECK(p.ScratchBytes(10) == 11);
  Collect c;
  uint8_t scratch[4];
  s = p.Run(reinterpret_cast<const uint8_t*>("abcd"), 4, Span<uint8_t>(scratch, 4), &c);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(c.pieces.empty());
  CHECK(std::string(PreTokenizerStepName(Step::kSplitQwen2)) == "Split(Qwen2 pattern)");
}

}  // namespace
}  // namespace tern::bpe
