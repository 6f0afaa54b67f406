// GPT-2's byte-to-unicode table (ByteLevel in Hugging Face tokenizers): every byte is shown as
// one printable code point, so a byte-level BPE vocabulary is written in JSON as text. The
// printable bytes ! .. ~, ¡ .. ¬ and ® .. ÿ stand for themselves; the other 68 bytes are
// U+0100 .. U+0143 in byte order (so the space 0x20 is U+0120 'Ġ', the newline 'Ċ').
#pragma once

#include <cstdint>
#include <string>

namespace tern::convert {

// The code point that stands for byte b.
uint32_t ByteToUnicode(uint8_t b);
// The byte that code point cp stands for, or -1 when it stands for none.
int ByteFromUnicode(uint32_t cp);

// A vocabulary token (UTF-8) to the bytes it stands for. False when some code point stands for
// no byte: then *bytes is the token's own UTF-8, which is what Hugging Face's ByteLevel decoder
// gives for such a token.
bool ByteLevelDecode(const std::string& token, std::string* bytes);
// Bytes to their byte-level text (UTF-8).
std::string ByteLevelEncode(const std::string& bytes);

}  // namespace tern::convert
