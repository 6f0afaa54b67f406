// The generated Unicode tables at code points whose class the split patterns depend on.
#include "runtime/tokenizer/unicode_classes.h"

#include <catch2/catch_test_macros.hpp>
#include <cstring>

namespace tern::unicode {
namespace {

TEST_CASE("letters, numbers and white space as Oniguruma sees them", "[tokenizer][unicode]") {
  CHECK(std::strcmp(kUnicodeVersion, "14.0.0") == 0);
  for (const uint32_t cp : {0x61u, 0x5Au, 0xE9u, 0x3B1u, 0x44Fu, 0x65E5u, 0x30ABu, 0xAC00u, 0x1100u,
                            0x2C6u, 0x10400u, 0x20000u}) {
    CHECK(ClassOf(cp) == CharClass::kLetter);
  }
  // Nd, Nl and No: ASCII and Arabic-Indic digits, fullwidth 1, superscript 2, one half, Roman
  // numeral twelve, circled one.
  for (const uint32_t cp : {0x30u, 0x39u, 0x663u, 0xFF11u, 0xB2u, 0xBDu, 0x216Bu, 0x2460u}) {
    CHECK(ClassOf(cp) == CharClass::kNumber);
  }
  // White_Space, including U+0085 and the separators; not U+FEFF, U+200B or U+180E.
  for (const uint32_t cp : {0x9u, 0xAu, 0xDu, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2003u, 0x2028u,
                            0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    CHECK(ClassOf(cp) == CharClass::kWhitespace);
  }
  // Marks, punctuation, symbols, format characters, controls, emoji, unassigned.
  for (const uint32_t cp : {0x301u, 0x5Fu, 0x27u, 0x20ACu, 0xFEFFu, 0x200Bu, 0x180Eu, 0x0u, 0x1Fu,
                            0x1F600u, 0x1F3FDu, 0xE0001u, 0x10FFFFu, 0x378u}) {
    CHECK(ClassOf(cp) == CharClass::kOther);
  }
}

TEST_CASE("contraction letters fold case, LONG S too", "[tokenizer][unicode]") {
  CHECK(ContractionLetter('s') == 's');
  CHECK(ContractionLetter('S') == 's');
  CHECK(ContractionLetter('L') == 'l');
  CHECK(ContractionLetter(0x17F) == 's');
  CHECK(ContractionLetter('x') == 0);
  CHECK(ContractionLetter('K') == 0);
  CHECK(ContractionLetter(0x212A) == 0);  // KELVIN SIGN folds to k, no contraction has k
  CHECK(ContractionLetter(0) == 0);
}

}  // namespace
}  // namespace tern::unicode
