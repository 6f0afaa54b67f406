#include "runtime/tokenizer/unicode_classes.h"

namespace tern::unicode {

namespace {

// ASCII by hand: the pre-tokenizer asks for every byte of ASCII text.
CharClass AsciiClass(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kNumber;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return CharClass::kWhitespace;
  return CharClass::kOther;
}

}  // namespace

CharClass ClassOf(uint32_t code_point) {
  if (code_point < 0x80) return AsciiClass(code_point);
  size_t lo = 0, hi = kClassRangeCount;  // the first range whose last >= code_point
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (kClassRanges[mid].last < code_point) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < kClassRangeCount && kClassRanges[lo].first <= code_point) {
    return kClassRanges[lo].char_class;
  }
  return CharClass::kOther;
}

char ContractionLetter(uint32_t code_point) {
  static constexpr char kLetters[] = "strevmld";
  if (code_point < 0x80) {
    const char lower =
        static_cast<char>(code_point >= 'A' && code_point <= 'Z' ? code_point + 32 : code_point);
    for (const char* l = kLetters; *l; ++l) {
      if (*l == lower) return lower;
    }
    return 0;
  }
  for (size_t i = 0; i < kContractionFoldCount; ++i) {
    if (kContractionFolds[i].code_point == code_point) return kContractionFolds[i].ascii_letter;
  }
  return 0;
}

}  // namespace tern::unicode
