// The Unicode character classes the byte-level BPE pre-tokenizer's split patterns test:
// \p{L}, \p{N} and \s (White_Space), as Oniguruma (the regex engine of Hugging Face's Rust
// tokenizers) defines them. The tables are generated from Python's unicodedata by
// tools/tokenizer/make_unicode_tables.py into unicode_classes_data.cc; kUnicodeVersion says
// which Unicode version they are. Code points outside them (unassigned, marks, punctuation,
// symbols, controls other than white space) are kOther.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::unicode {

enum class CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kWhitespace = 3 };

struct ClassRange {
  uint32_t first;
  uint32_t last;
  CharClass char_class;
};

struct CaseFold {
  uint32_t code_point;
  char ascii_letter;
};

extern const char kUnicodeVersion[];
extern const ClassRange kClassRanges[];
extern const size_t kClassRangeCount;
extern const CaseFold kContractionFolds[];
extern const size_t kContractionFoldCount;

// The class of a code point (binary search above ASCII).
CharClass ClassOf(uint32_t code_point);

// The ASCII letter `code_point` matches case-insensitively among the letters of the contractions
// of the LLaMA-3 pattern ('s 't 're 've 'm 'll 'd), lower case, or 0: 'S' -> 's', U+017F LONG S
// -> 's' (its case folding), 'x' -> 0.
char ContractionLetter(uint32_t code_point);

}  // namespace tern::unicode
