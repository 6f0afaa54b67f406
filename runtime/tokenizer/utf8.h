// UTF-8 helpers of the tokenizers: validation (the text paths refuse invalid input with the
// byte offset) and decoding of text already validated.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

// Offset of the first invalid UTF-8 byte in text, or -1 when it is valid (overlong forms,
// surrogates and code points above U+10FFFF are invalid).
int64_t FindInvalidUtf8(const char* text, size_t size);

// Bytes of the UTF-8 sequence that `lead` starts: 1 to 4, or 0 for a continuation byte or a
// byte that never starts one.
size_t Utf8SequenceLength(uint8_t lead);

// The code point at text[pos] of valid UTF-8 (pos < size); *length gets its bytes. Safe on
// any bytes: an invalid or truncated sequence reads as its first byte, one byte long.
uint32_t DecodeUtf8(const uint8_t* text, size_t size, size_t pos, size_t* length);

}  // namespace tern
