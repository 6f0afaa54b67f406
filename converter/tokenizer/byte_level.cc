#include "converter/tokenizer/byte_level.h"

#include <array>

#include "runtime/tokenizer/utf8.h"

namespace tern::convert {

namespace {

bool StandsForItself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

const std::array<uint32_t, 256>& Table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) t[b] = StandsForItself(b) ? static_cast<uint32_t>(b) : next++;
    return t;
  }();
  return table;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {  // the table only reaches U+0143
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

uint32_t ByteToUnicode(uint8_t b) { return Table()[b]; }

int ByteFromUnicode(uint32_t cp) {
  if (cp < 256 && StandsForItself(static_cast<int>(cp))) return static_cast<int>(cp);
  if (cp >= 256 && cp < 256 + 68) {
    int k = static_cast<int>(cp - 256);  // the k-th byte that does not stand for itself
    for (int b = 0; b < 256; ++b) {
      if (!StandsForItself(b) && k-- == 0) return b;
    }
  }
  return -1;
}

bool ByteLevelDecode(const std::string& token, std::string* bytes) {
  bytes->clear();
  const auto* s = reinterpret_cast<const uint8_t*>(token.data());
  for (size_t pos = 0; pos < token.size();) {
    size_t length;
    const int b = ByteFromUnicode(DecodeUtf8(s, token.size(), pos, &length));
    if (b < 0 || (length == 1 && s[pos] >= 0x80)) {
      *bytes = token;
      return false;
    }
    bytes->push_back(static_cast<char>(b));
    pos += length;
  }
  return true;
}

std::string ByteLevelEncode(const std::string& bytes) {
  std::string out;
  for (const char c : bytes) AppendUtf8(ByteToUnicode(static_cast<uint8_t>(c)), &out);
  return out;
}

}  // namespace tern::convert
