// Utf8Stream: characters split across tokens come out whole, in order, with nothing lost.
#include "runtime/tokenizer/utf8_stream.h"

#include <catch2/catch_test_macros.hpp>
#include <string>
#include <vector>

namespace tern {
namespace {

// Feeds the chunks one by one; returns what came out after each.
std::vector<std::string> Feed(Utf8Stream* s, const std::vector<std::string>& chunks) {
  std::vector<std::string> out;
  for (const std::string& c : chunks) {
    std::vector<char> buffer(Utf8Stream::OutputBytes(c.size()));
    size_t n = 0;
    REQUIRE(s->Next(Span<const uint8_t>(reinterpret_cast<const uint8_t*>(c.data()), c.size()),
                    Span<char>(buffer.data(), buffer.size()), &n)
                .ok());
    out.emplace_back(buffer.data(), n);
  }
  return out;
}

TEST_CASE("a character split over tokens waits for its last byte", "[tokenizer][utf8]") {
  Utf8Stream s;
  // 👍 is F0 9F 91 8D, 日 is E6 97 A5.
  CHECK(Feed(&s, {"a\xf0", "\x9f", "\x91\x8d\xe6", "\x97\xa5!"}) ==
        std::vector<std::string>{"a", "", "\xf0\x9f\x91\x8d", "\xe6\x97\xa5!"});
  CHECK(s.pending() == 0);
  CHECK(Feed(&s, {"ok \xc3"}) == std::vector<std::string>{"ok "});
  CHECK(s.pending() == 1);
  char rest[4];
  CHECK(s.Flush(Span<char>(rest, 4)) == 1);
  CHECK(rest[0] == '\xc3');
  CHECK(s.pending() == 0);
}

TEST_CASE("bytes that cannot start or finish a character pass through", "[tokenizer][utf8]") {
  Utf8Stream s;
  CHECK(Feed(&s, {"\x80x", "\xff", "\xc3(", "\xe6\x97"}) ==
        std::vector<std::string>{"\x80x", "\xff", "\xc3(", ""});
  CHECK(Feed(&s, {"\xe6"}) == std::vector<std::string>{"\xe6\x97"});  // E6 97 then E6: emits
  CHECK(s.pending() == 1);
}

TEST_CASE("the output must have room", "[tokenizer][utf8]") {
  Utf8Stream s;
  char one[1];
  size_t n = 7;
  const uint8_t ab[] = {'a', 'b'};
  CHECK(s.Next(Span<const uint8_t>(ab, 2), Span<char>(one, 1), &n).code() ==
        StatusCode::kInvalidArgument);
  CHECK(n == 0);
}

}  // namespace
}  // namespace tern
