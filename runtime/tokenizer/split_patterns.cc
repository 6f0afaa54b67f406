#include "runtime/tokenizer/split_patterns.h"

#include "runtime/tokenizer/unicode_classes.h"
#include "runtime/tokenizer/utf8.h"

namespace tern::bpe {

namespace {

using unicode::CharClass;

// Reads code points of the text; "class" is \p{L}, \p{N}, \s or neither (kOther, the class
// [^\s\p{L}\p{N}]).
struct Text {
  const uint8_t* data;
  size_t size;

  uint32_t At(size_t pos, size_t* length) const { return DecodeUtf8(data, size, pos, length); }
  CharClass ClassAt(size_t pos) const {
    size_t length;
    return unicode::ClassOf(At(pos, &length));
  }
  // The end of the run of `cls` code points from pos (pos itself when there is none there).
  size_t RunEnd(size_t pos, CharClass cls) const {
    while (pos < size) {
      size_t length;
      if (unicode::ClassOf(At(pos, &length)) != cls) break;
      pos += length;
    }
    return pos;
  }
  // The end of at most `max` code points of `cls` from pos.
  size_t RunEnd(size_t pos, CharClass cls, int max) const {
    for (int n = 0; n < max && pos < size; ++n) {
      size_t length;
      if (unicode::ClassOf(At(pos, &length)) != cls) break;
      pos += length;
    }
    return pos;
  }
  bool IsCrLf(size_t pos) const { return pos < size && (data[pos] == '\r' || data[pos] == '\n'); }
};

// \s+(?!\S)|\s+ at pos, where a white space run starts: the run, less its last code point when
// a non-space follows and the run has more than one (the look-ahead then sees white space).
size_t MatchSpaceRun(const Text& t, size_t pos) {
  size_t end = pos, last = pos;
  while (end < t.size) {
    size_t length;
    if (unicode::ClassOf(t.At(end, &length)) != CharClass::kWhitespace) break;
    last = end;
    end += length;
  }
  if (end == t.size || last == pos) return end - pos;
  return last - pos;
}

// GPT-2's contractions, case-sensitive: 's 't 're 've 'm 'll 'd (0: none at pos).
size_t MatchGpt2Contraction(const Text& t, size_t pos) {
  if (t.data[pos] != '\'' || pos + 1 >= t.size) return 0;
  const uint8_t c = t.data[pos + 1];
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  if (pos + 2 < t.size) {
    const uint8_t d = t.data[pos + 2];
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  }
  return 0;
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d): the letters case-insensitive with Unicode case folding (so
// U+017F LONG S is an s); 0: none at pos.
size_t MatchFoldedContraction(const Text& t, size_t pos) {
  if (t.data[pos] != '\'' || pos + 1 >= t.size) return 0;
  size_t first_length;
  const char c = unicode::ContractionLetter(t.At(pos + 1, &first_length));
  if (c == 's' || c == 't' || c == 'm' || c == 'd') return 1 + first_length;
  if (c == 'r' || c == 'v' || c == 'l') {
    const size_t second = pos + 1 + first_length;
    if (second >= t.size) return 0;
    size_t second_length;
    const char d = unicode::ContractionLetter(t.At(second, &second_length));
    if ((c != 'l' && d == 'e') || (c == 'l' && d == 'l')) return 1 + first_length + second_length;
  }
  return 0;
}

size_t MatchGpt2(const Text& t, size_t pos) {
  if (const size_t n = MatchGpt2Contraction(t, pos)) return n;
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': the classes are disjoint, so the one of the
  // code point after the optional space decides which alternative matches.
  if (t.data[pos] == ' ' && pos + 1 < t.size) {
    const CharClass next = t.ClassAt(pos + 1);
    if (next != CharClass::kWhitespace) return t.RunEnd(pos + 1, next) - pos;
  }
  const CharClass cls = t.ClassAt(pos);
  if (cls != CharClass::kWhitespace) return t.RunEnd(pos, cls) - pos;
  return MatchSpaceRun(t, pos);
}

size_t MatchLlama3(const Text& t, size_t pos, int max_digits) {
  if (const size_t n = MatchFoldedContraction(t, pos)) return n;
  size_t first_length;
  const uint32_t first = t.At(pos, &first_length);
  const CharClass cls = unicode::ClassOf(first);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (cls == CharClass::kLetter) return t.RunEnd(pos, CharClass::kLetter) - pos;
  if (first != '\r' && first != '\n' && cls != CharClass::kNumber) {
    const size_t next = pos + first_length;
    if (next < t.size && t.ClassAt(next) == CharClass::kLetter) {
      return t.RunEnd(next, CharClass::kLetter) - pos;
    }
  }
  // \p{N}{1,3} (Qwen2: \p{N})
  if (cls == CharClass::kNumber) return t.RunEnd(pos, CharClass::kNumber, max_digits) - pos;
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t other = pos;
  if (first == ' ' && pos + 1 < t.size && t.ClassAt(pos + 1) == CharClass::kOther) {
    other = pos + 1;
  }
  if (t.ClassAt(other) == CharClass::kOther) {
    size_t end = t.RunEnd(other, CharClass::kOther);
    while (t.IsCrLf(end)) ++end;
    return end - pos;
  }
  // Here the code point at pos is white space. \s*[\r\n]+: the run up to its last CR or LF.
  size_t end = pos, crlf_end = 0;
  while (end < t.size) {
    size_t length;
    if (unicode::ClassOf(t.At(end, &length)) != CharClass::kWhitespace) break;
    if (t.IsCrLf(end)) crlf_end = end + 1;
    end += length;
  }
  if (crlf_end != 0) return crlf_end - pos;
  return MatchSpaceRun(t, pos);
}

}  // namespace

size_t MatchSplitPattern(SplitPattern pattern, const uint8_t* text, size_t size, size_t pos) {
  const Text t{text, size};
  switch (pattern) {
    case SplitPattern::kGpt2:
      return MatchGpt2(t, pos);
    case SplitPattern::kLlama3:
      return MatchLlama3(t, pos, 3);
    case SplitPattern::kQwen2:
      return MatchLlama3(t, pos, 1);
  }
  return 1;
}

}  // namespace tern::bpe
