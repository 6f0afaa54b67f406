// The text path's streaming (text_stream.h): whole UTF-8 characters per token, invalid bytes as
// U+FFFD, stop strings matched across token boundaries (held back while they may still match,
// released when they fail, never printed), on hand-made token bytes and on the tokens of the
// byte-level BPE fixture, whose tokens cut multi-byte characters.
#include "runtime/tokenizer/text_stream.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "runtime/tokenizer/utf8.h"
#include "runtime/tokenizer/utf8_stream.h"
#include "tests/support/tokenizer_model.h"

namespace tern::testing {
namespace {

Span<const uint8_t> Bytes(const std::string& s) {
  return Span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

// Feeds the tokens; returns what each released (stopping early when a stop string completes),
// then, as the last entry, what Finish released.
std::vector<std::string> Stream(const std::vector<std::string>& tokens,
                                const std::vector<std::string>& stop, bool* stopped = nullptr) {
  TextStream stream;
  REQUIRE(stream.Start(stop).ok());
  std::vector<std::string> pieces;
  bool done = false;
  for (const std::string& t : tokens) {
    std::string piece;
    stream.Next(Bytes(t), &piece, &done);
    pieces.push_back(piece);
    if (done) break;
  }
  std::string tail;
  stream.Finish(&tail);
  pieces.push_back(tail);
  if (stopped != nullptr) *stopped = stream.stopped();  // also a stop completed by Finish
  return pieces;
}

using Pieces = std::vector<std::string>;

TEST_CASE("a stop string split over tokens ends the stream and is not printed", "[text]") {
  bool stopped = false;
  CHECK(Stream({"Hello", " wor", "ld\n", "\nBye"}, {"\n\n"}, &stopped) ==
        Pieces{"Hello", " wor", "ld", "", ""});
  CHECK(stopped);
  // Inside one token, with text after it: only the text before it.
  CHECK(Stream({"ab", "c--d", "e"}, {"--"}, &stopped) == Pieces{"ab", "c", ""});
  CHECK(stopped);
  // Over three tokens.
  CHECK(Stream({"x<", "|e", "nd|>", "y"}, {"<|end|>"}, &stopped) == Pieces{"x", "", "", ""});
  CHECK(stopped);
}

TEST_CASE("text held for a partial stop string is released once it cannot match", "[text]") {
  bool stopped = true;
  CHECK(Stream({"xa", "b", "d"}, {"abc"}, &stopped) == Pieces{"x", "", "abd", ""});
  CHECK_FALSE(stopped);
  // Only the part that can still begin the stop string is held: "aa" releases one "a".
  CHECK(Stream({"aa", "b", "c"}, {"abc"}, &stopped) == Pieces{"a", "", "", ""});
  CHECK(stopped);
  // The end of the stream releases what is held.
  CHECK(Stream({"xab"}, {"abc"}, &stopped) == Pieces{"x", "ab"});
  CHECK_FALSE(stopped);
}

TEST_CASE("of several stop strings the earliest in the text wins", "[text]") {
  CHECK(Stream({"abcd"}, {"cd", "bc"}) == Pieces{"a", ""});
  CHECK(Stream({"ab", "cd"}, {"cd", "bcX"}) == Pieces{"a", "b", ""});
}

TEST_CASE("characters split across tokens come out whole", "[text]") {
  // é = C3 A9; U+1F642 = F0 9F 99 82 over four tokens.
  CHECK(Stream({"a\xC3", "\xA9", "b"}, {}) == Pieces{"a", "\xC3\xA9", "b", ""});
  CHECK(Stream({"\xF0", "\x9F", "\x99", "\x82!"}, {}) ==
        Pieces{"", "", "", "\xF0\x9F\x99\x82!", ""});
  // A stop string that starts inside a held character.
  bool stopped = false;
  CHECK(Stream({"a\xC3", "\xA9!z"}, {"\xC3\xA9!"}, &stopped) == Pieces{"a", "", ""});
  CHECK(stopped);
}

TEST_CASE("bytes that are not UTF-8 become U+FFFD, one per byte", "[text]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(Stream({"a\xFF", "b"}, {}) == Pieces{"a" + fffd, "b", ""});
  // A continuation byte with no lead, and a lead cut off by a byte that cannot continue it.
  CHECK(Stream({"\x80", "\xC3", "x"}, {}) == Pieces{fffd, "", fffd + "x", ""});
  // An incomplete character at the end.
  CHECK(Stream({"ok\xE6\x97"}, {}) == Pieces{"ok", fffd + fffd});
}

// Random tokens of random bytes (ASCII, lead and continuation bytes, invalid ones) and random
// stop strings, against a plain model of the rule: after each token the visible text is the
// bytes so far (less a trailing incomplete character, Utf8Stream's) with ill-formed bytes
// replaced; the stream ends at the first token after which that text contains a stop string,
// cut before the earliest one it contains. The pieces are always valid UTF-8.
TEST_CASE("streaming equals the rule applied to the whole text after each token", "[text]") {
  std::mt19937 rng(11);
  const std::string alphabet[] = {"a",    "b",    "\n",   " ",    "\xC3", "\xA9", "\xE6", "\x97",
                                  "\xA5", "\xF0", "\x9F", "\x99", "\x82", "\xFF", "\x80", "\xED"};
  auto random_text = [&](size_t most) {
    std::string t;
    const size_t n = rng() % (most + 1);
    for (size_t i = 0; i < n; ++i) t += alphabet[rng() % std::size(alphabet)];
    return t;
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> tokens(rng() % 12);
    for (std::string& t : tokens) t = random_text(4);
    std::vector<std::string> stop;
    for (size_t i = rng() % 3; i > 0; --i) {
      std::string s;  // whole characters, as a user's stop strings are
      const std::string raw = random_text(3);
      AppendValidUtf8(raw.data(), raw.size(), &s);
      if (!s.empty()) stop.push_back(s);
    }
    // The model: the whole visible text after each token, searched from its start.
    Utf8Stream chars;
    std::string visible, expected;
    bool stops = false;
    auto search = [&]() {
      size_t first = std::string::npos;
      for (const std::string& s : stop) first = std::min(first, visible.find(s));
      if (first == std::string::npos) return false;
      expected = visible.substr(0, first);
      return true;
    };
    for (const std::string& t : tokens) {
      char out[16];
      size_t size = 0;
      REQUIRE(chars.Next(Bytes(t), Span<char>(out, sizeof out), &size).ok());
      AppendValidUtf8(out, size, &visible);
      if ((stops = search())) break;
    }
    if (!stops) {
      char tail[4];
      const size_t size = chars.Flush(Span<char>(tail, sizeof tail));
      AppendValidUtf8(tail, size, &visible);
      stops = search();
      if (!stops) expected = visible;
    }

    bool stopped = false;
    std::string joined;
    for (const std::string& piece : Stream(tokens, stop, &stopped)) {
      CHECK(FindInvalidUtf8(piece.data(), piece.size()) < 0);
      joined += piece;
    }
    INFO("round " << round);
    CHECK(joined == expected);
    CHECK(stopped == stops);
  }
}

TEST_CASE("an empty stop string is refused", "[text]") {
  TextStream stream;
  const Status s = stream.Start({"x", ""});
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) == "stop string 1 is empty");
}

TEST_CASE("the BPE fixture's tokens cut characters; the stream never does", "[text]") {
  std::ifstream file(std::string(TERN_FIXTURES) + "/tokenizer/bpe_gpt2/tokenizer.json");
  const std::string json((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  LoadedBpe bpe(json);
  REQUIRE(bpe.status().ok());
  const std::string text = "日本語のテキスト 🙂👍🏽 naïve Ærøskøbing ꙮ 𝄞";
  std::vector<int32_t> ids;
  REQUIRE(bpe->Encode(text, BpeEncodeOptions(), &ids).ok());
  TextStream stream;
  REQUIRE(stream.Start({}).ok());
  std::string joined;
  size_t cut = 0;  // tokens whose bytes are not whole characters on their own
  for (int32_t id : ids) {
    Span<const uint8_t> bytes;
    REQUIRE(bpe->TokenBytes(id, &bytes).ok());
    if (FindInvalidUtf8(reinterpret_cast<const char*>(bytes.data()), bytes.size()) >= 0) ++cut;
    std::string piece;
    bool stopped = false;
    stream.Next(bytes, &piece, &stopped);
    CHECK(FindInvalidUtf8(piece.data(), piece.size()) < 0);
    joined += piece;
  }
  std::string tail;
  stream.Finish(&tail);
  CHECK(tail.empty());
  CHECK(cut >= 5);  // the test means something only if tokens do cut characters
  CHECK(joined == text);
}

}  // namespace
}  // namespace tern::testing
