// Unicode Normalization Form C (UAX #15), the normalizer of Qwen2's tokenizer.json: canonical
// decomposition, canonical ordering of combining marks, canonical composition. The tables are
// generated from Python's unicodedata into unicode_nfc_data.cc (tools/tokenizer/
// make_unicode_tables.py; the Unicode version is kUnicodeVersion of unicode_classes.h). Hangul
// syllables are decomposed and composed by the algorithm of Unicode section 3.12.
//
// No allocation: the caller gives the working memory and the output.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/status.h"

namespace tern::unicode {

struct CombiningClassRange {
  uint32_t first;
  uint32_t last;
  uint8_t combining_class;
};
struct Decomposition {
  uint32_t code_point;
  uint16_t offset;  // into kDecompositionPool
  uint8_t length;   // 1 to 4
};
struct Composition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

extern const CombiningClassRange kCombiningClasses[];
extern const size_t kCombiningClassCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const uint32_t kDecompositionPool[];
extern const Composition kCompositions[];
extern const size_t kCompositionCount;

uint8_t CombiningClass(uint32_t code_point);

// NFC grows UTF-8 text at most 3 times (UAX #15, "Design Goals"; the generator checks each code
// point); decomposed, a byte becomes at most 1.5 code points.
inline constexpr size_t NfcOutputBytes(size_t size) { return 3 * size; }
inline constexpr size_t NfcWorkCodePoints(size_t size) { return 2 * size; }

// The NFC of valid UTF-8 `text` into `out`; *out_size gets its bytes. `work` holds
// NfcWorkCodePoints(size) code points, `out` NfcOutputBytes(size) bytes.
Status NormalizeNfc(const uint8_t* text, size_t size, Span<uint32_t> work, Span<uint8_t> out,
                    size_t* out_size);

}  // namespace tern::unicode
