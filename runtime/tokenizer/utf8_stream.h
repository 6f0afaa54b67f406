// Streams token bytes out as whole UTF-8 characters: a character split across tokens (byte-
// level BPE does that to emoji and CJK) is held back until its last byte arrives, so a caller
// printing each token as it is generated never prints half a character. Nothing is allocated:
// at most 3 bytes wait inside.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/status.h"

namespace tern {

class Utf8Stream {
 public:
  // Bytes Next may write for a token of `token_size` bytes.
  static constexpr size_t OutputBytes(size_t token_size) { return token_size + 3; }

  // Appends bytes (e.g. BpeTokenizer::TokenBytes of the next id) and writes to `out` what is
  // now complete: everything except a trailing incomplete character. Bytes that cannot start or
  // continue a character are passed through as they are. *size gets the bytes written.
  Status Next(Span<const uint8_t> bytes, Span<char> out, size_t* size);

  // Writes what is still held back (an incomplete character at the end of the stream).
  size_t Flush(Span<char> out);

  size_t pending() const { return pending_size_; }

 private:
  uint8_t pending_[4] = {};
  size_t pending_size_ = 0;
};

}  // namespace tern
