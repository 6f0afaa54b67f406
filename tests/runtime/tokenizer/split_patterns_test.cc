// The split patterns on the cases where regex semantics decide: alternation order, greedy runs
// that backtrack (\s+(?!\S), \s*[\r\n]+), the optional space or other character before a word,
// case-insensitive contractions, digit groups, and code points outside ASCII. The expected pieces
// are worked out from the patterns by hand (and agree with Hugging Face's JavaScript tokenizers,
// whose agreement test runs these patterns on the whole corpus).
#include "runtime/tokenizer/split_patterns.h"

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

namespace tern::bpe {
namespace {

std::vector<std::string> Split(SplitPattern pattern, const std::string& text) {
  std::vector<std::string> pieces;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = MatchSplitPattern(pattern, s, text.size(), pos);
    REQUIRE(n >= 1);
    REQUIRE(pos + n <= text.size());
    pieces.push_back(text.substr(pos, n));
    pos += n;
  }
  return pieces;
}

using Pieces = std::vector<std::string>;

TEST_CASE("GPT-2 pattern: words keep one space before them", "[tokenizer][split]") {
  const auto p = SplitPattern::kGpt2;
  CHECK(Split(p, "Hello world") == Pieces{"Hello", " world"});
  CHECK(Split(p, "a  b") == Pieces{"a", " ", " b"});  // the run gives up its last space
  CHECK(Split(p, "  hello") == Pieces{" ", " hello"});
  CHECK(Split(p, "abc   ") == Pieces{"abc", "   "});  // at the end the whole run
  CHECK(Split(p, "x\n\ny") == Pieces{"x", "\n", "\n", "y"});
  CHECK(Split(p, "\tfoo") == Pieces{"\t", "foo"});  // only U+0020 joins a word
  CHECK(Split(p, "123abc 45") == Pieces{"123", "abc", " 45"});
  CHECK(Split(p, "a,b ,, !?") == Pieces{"a", ",", "b", " ,,", " !?"});
}

TEST_CASE("GPT-2 pattern: contractions are lower case only, and come first", "[tokenizer][split]") {
  const auto p = SplitPattern::kGpt2;
  CHECK(Split(p, "I'm don't they'll we've you're she'd it's") ==
        Pieces{"I", "'m", " don", "'t", " they", "'ll", " we", "'ve", " you", "'re", " she", "'d",
               " it", "'s"});
  CHECK(Split(p, "I'M") == Pieces{"I", "'", "M"});
  CHECK(Split(p, "'sup") == Pieces{"'s", "up"});
  CHECK(Split(p, "?'s") == Pieces{"?'", "s"});  // the punctuation run takes the apostrophe
  CHECK(Split(p, "'re'") == Pieces{"'re", "'"});
}

TEST_CASE("GPT-2 pattern: classes beyond ASCII", "[tokenizer][split]") {
  const auto p = SplitPattern::kGpt2;
  CHECK(Split(p, "日本語 テキスト") == Pieces{"日本語", " テキスト"});
  CHECK(Split(p, "e\xcc\x81t\xc3\xa9") == Pieces{"e", "\xcc\x81", "t\xc3\xa9"});  // e + U+0301
  CHECK(Split(p,
              "\xe2\x82\xac"
              "100 \xc2\xbd") == Pieces{"\xe2\x82\xac", "100", " \xc2\xbd"});
  // U+00A0 is white space (White_Space), so not part of a word, and no space joins it.
  CHECK(Split(p, "\xc2\xa0x") == Pieces{"\xc2\xa0", "x"});
  CHECK(Split(p, " \xc2\xa0x") == Pieces{" ", "\xc2\xa0", "x"});
  // U+3000 IDEOGRAPHIC SPACE: a run of two gives up its last code point (three bytes).
  CHECK(Split(p,
              "a\xe3\x80\x80\xe3\x80\x80"
              "b") == Pieces{"a", "\xe3\x80\x80", "\xe3\x80\x80", "b"});
  // U+FEFF is not White_Space (JavaScript's \s says it is).
  CHECK(Split(p, " \xef\xbb\xbfz") == Pieces{" \xef\xbb\xbf", "z"});
  // U+0085 NEXT LINE is White_Space (JavaScript's \s says it is not).
  CHECK(Split(p, "a\xc2\x85") == Pieces{"a", "\xc2\x85"});
  CHECK(Split(p, "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd!") ==
        Pieces{"\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd!"});
}

TEST_CASE("LLaMA 3 pattern: one non-letter joins a word, digits go in threes",
          "[tokenizer][split]") {
  const auto p = SplitPattern::kLlama3;
  CHECK(Split(p, "Hello world") == Pieces{"Hello", " world"});
  CHECK(Split(p, "\tfoo (bar") == Pieces{"\tfoo", " (", "bar"});  // one character, not two
  CHECK(Split(p, "x(bar") == Pieces{"x", "(bar"});
  CHECK(Split(p, "\nfoo") == Pieces{"\n", "foo"});  // but not a line break
  CHECK(Split(p, "hello1234567") == Pieces{"hello", "123", "456", "7"});
  CHECK(Split(p, " 12") == Pieces{" ", "12"});  // no space before digits
  // Arabic-Indic digits are \p{N} too.
  CHECK(Split(p, "\xd9\xa1\xd9\xa2\xd9\xa3\xd9\xa4") ==
        Pieces{"\xd9\xa1\xd9\xa2\xd9\xa3", "\xd9\xa4"});
}

TEST_CASE("LLaMA 3 pattern: contractions in any case, with Unicode case folding",
          "[tokenizer][split]") {
  const auto p = SplitPattern::kLlama3;
  CHECK(Split(p, "I'M DON'T THEY'LL") == Pieces{"I", "'M", " DON", "'T", " THEY", "'LL"});
  CHECK(Split(p, "x'Re y'lL") == Pieces{"x", "'Re", " y", "'lL"});
  CHECK(Split(p, "it'\xc5\xbf") == Pieces{"it", "'\xc5\xbf"});  // U+017F LONG S folds to s
  CHECK(Split(p, "'x") == Pieces{"'x"});  // not a contraction: the apostrophe joins the word
}

TEST_CASE("LLaMA 3 pattern: punctuation takes line breaks, space runs end at the last one",
          "[tokenizer][split]") {
  const auto p = SplitPattern::kLlama3;
  CHECK(Split(p, "...\n\nfoo") == Pieces{"...\n\n", "foo"});
  CHECK(Split(p, " ?!\r\n") == Pieces{" ?!\r\n"});
  CHECK(Split(p, "x  \n\n  y") == Pieces{"x", "  \n\n", " ", " y"});
  CHECK(Split(p, "a \n b") == Pieces{"a", " \n", " b"});
  CHECK(Split(p, "a   ") == Pieces{"a", "   "});
  CHECK(Split(p, "a  b") == Pieces{"a", " ", " b"});
  CHECK(Split(p, "\t(") == Pieces{"\t", "("});
}

TEST_CASE("Qwen2 pattern: digits one by one, otherwise LLaMA 3's", "[tokenizer][split]") {
  CHECK(Split(SplitPattern::kQwen2, "a12345") == Pieces{"a", "1", "2", "3", "4", "5"});
  CHECK(Split(SplitPattern::kQwen2, "I'M x\n\n y") == Split(SplitPattern::kLlama3, "I'M x\n\n y"));
}

}  // namespace
}  // namespace tern::bpe
