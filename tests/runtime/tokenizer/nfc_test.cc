// NFC against Python's unicodedata.normalize (an independent implementation), on the cases of
// tests/fixtures/tokenizer/nfc_cases.txt: every code point with a canonical decomposition or a
// combining class, Hangul, and random sequences of marks in any order.
#include "runtime/tokenizer/nfc.h"

#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tern::unicode {
namespace {

std::string Utf8(const std::vector<uint32_t>& cps) {
  std::string s;
  for (const uint32_t cp : cps) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

std::vector<uint32_t> Hex(const std::string& field) {
  std::vector<uint32_t> out;
  std::istringstream in(field);
  std::string h;
  while (in >> h) out.push_back(static_cast<uint32_t>(std::stoul(h, nullptr, 16)));
  return out;
}

std::string Nfc(const std::string& text) {
  std::vector<uint32_t> work(NfcWorkCodePoints(text.size()));
  std::vector<uint8_t> out(NfcOutputBytes(text.size()));
  size_t size = 0;
  const Status s = NormalizeNfc(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                Span<uint32_t>(work.data(), work.size()),
                                Span<uint8_t>(out.data(), out.size()), &size);
  REQUIRE(s.ok());
  return std::string(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(size));
}

TEST_CASE("NFC agrees with Python's unicodedata on every decomposable code point",
          "[tokenizer][nfc]") {
  std::ifstream in(std::string(TERN_FIXTURES) + "/tokenizer/nfc_cases.txt");
  REQUIRE(in);
  std::string line;
  size_t cases = 0, failed = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t semicolon = line.find(';');
    REQUIRE(semicolon != std::string::npos);
    const std::string source = Utf8(Hex(line.substr(0, semicolon)));
    const std::string expected = Utf8(Hex(line.substr(semicolon + 1)));
    ++cases;
    if (Nfc(source) != expected) {
      if (++failed <= 10)
        FAIL_CHECK("NFC of " << line.substr(0, semicolon) << " should be "
                             << line.substr(semicolon + 1));
    }
  }
  CHECK(cases > 4000);
  CHECK(failed == 0);
}

TEST_CASE("NFC: text as it is, composed, reordered; ASCII untouched", "[tokenizer][nfc]") {
  CHECK(Nfc("plain ASCII") == "plain ASCII");
  CHECK(Nfc("") == "");
  CHECK(Nfc("Cafe\xcc\x81") == "Caf\xc3\xa9");        // e + U+0301 -> é
  CHECK(Nfc("a\xcc\xa3\xcc\x82") == "\xe1\xba\xad");  // a + dot below + circumflex
  CHECK(Nfc("a\xcc\x82\xcc\xa3") == "\xe1\xba\xad");  // the marks in the other order
  CHECK(Nfc("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab") == "\xed\x95\x9c");  // jamo -> 한
  CHECK(Nfc("\xe2\x84\xab") == "\xc3\x85");                              // ANGSTROM SIGN -> Å
  CHECK(Nfc("\xe0\xa5\x98") == "\xe0\xa4\x95\xe0\xa4\xbc");  // U+0958: excluded, stays split
  CHECK(Nfc("\xcc\x81x") == "\xcc\x81x");                    // a mark with no base
  CHECK(CombiningClass(0x301) == 230);
  CHECK(CombiningClass(0x323) == 220);
  CHECK(CombiningClass('a') == 0);
}

TEST_CASE("NFC refuses buffers that are too small", "[tokenizer][nfc]") {
  const std::string text = "e\xcc\x81";
  uint32_t work[1];
  uint8_t out[8];
  size_t size = 0;
  CHECK(NormalizeNfc(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                     Span<uint32_t>(work, 1), Span<uint8_t>(out, 8), &size)
            .code() == StatusCode::kInternal);
  uint32_t enough[8];
  CHECK(NormalizeNfc(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                     Span<uint32_t>(enough, 8), Span<uint8_t>(out, 1), &size)
            .code() == StatusCode::kInternal);
}

}  // namespace
}  // namespace tern::unicode
