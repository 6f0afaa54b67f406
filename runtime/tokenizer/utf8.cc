#include "runtime/tokenizer/utf8.h"

namespace tern {

int64_t FindInvalidUtf8(const char* text, size_t size) {
  const auto* s = reinterpret_cast<const unsigned char*>(text);
  size_t i = 0;
  while (i < size) {
    const unsigned char c = s[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + n >= size) return static_cast<int64_t>(i);  // truncated sequence
    for (size_t k = 1; k <= n; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return static_cast<int64_t>(i);
    i += n + 1;
  }
  return -1;
}

size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

uint32_t DecodeUtf8(const uint8_t* text, size_t size, size_t pos, size_t* length) {
  const uint8_t lead = text[pos];
  const size_t n = Utf8SequenceLength(lead);
  if (n <= 1 || pos + n > size) {
    *length = 1;
    return lead;
  }
  uint32_t cp = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const uint8_t c = text[pos + k];
    if ((c & 0xC0) != 0x80) {
      *length = 1;
      return lead;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *length = n;
  return cp;
}

}  // namespace tern
