// Generated tokens' bytes in, printable text out, as it is generated:
//   1. Utf8Stream holds back a character split across tokens until its last byte arrives (a
//      byte-level BPE token can end inside an emoji or a CJK character);
//   2. bytes that are not UTF-8 (a token sequence that is not text, or an incomplete character
//      when the stream ends) become U+FFFD, one per byte, so every piece is valid UTF-8;
//   3. stop strings are matched across token boundaries: text that could be the start of a
//      stop string is held back until the next tokens complete it (the stream stops; the stop
//      string and everything after it are never released) or rule it out (it is released).
//      The stream stops at the first token after which the text contains a stop string, and
//      the text ends before the earliest one it contains then (as llama.cpp and OpenAI-style
//      servers do: a longer stop string that began earlier and might still have completed
//      does not delay the stop).
// Each Next returns the text now final; Finish releases what is held at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/span.h"
#include "runtime/core/status.h"
#include "runtime/tokenizer/utf8_stream.h"

namespace tern {

class TextStream {
 public:
  // Starts a stream; stop strings must be non-empty (an error names the one that is not).
  // Their bytes are copied. The buffers are sized for tokens of up to max_token_bytes bytes
  // (TextTokenizer::max_token_bytes), so Next and Finish never allocate; they grow only when a
  // stream needs more than any before (longer tokens or stop strings).
  Status Start(const std::vector<std::string>& stop, size_t max_token_bytes = 0);

  // The most bytes one Next or Finish can release: 3 per byte (U+FFFD) of a token and of the
  // 3 bytes Utf8Stream may hold, plus the held part of a stop string.
  size_t MaxPieceBytes() const { return 3 * (max_token_bytes_ + 3) + max_stop_; }

  // Appends one token's bytes. *text gets the text released by this token (valid until the
  // next call; possibly empty); *stopped becomes true when a stop string is complete, after
  // which the stream takes nothing more.
  void Next(Span<const uint8_t> bytes, std::string* text, bool* stopped);

  // The end of the stream: what is still held back (an incomplete character, as U+FFFD; text
  // that a stop string could have continued), released.
  void Finish(std::string* text);

  bool stopped() const { return stopped_; }

 private:
  // Runs the stop strings over held_ + chunk; appends the final part to *text.
  void Match(const char* chunk, size_t size, std::string* text);

  Utf8Stream utf8_;
  std::vector<std::string> stop_;
  std::string chars_;  // this token's whole characters, invalid bytes replaced
  std::string held_;   // text a stop string could continue
  std::vector<char> raw_;
  bool stopped_ = false;
  size_t max_token_bytes_ = 0;
  size_t max_stop_ = 0;
};

// Appends bytes to *out with each byte that does not start a well-formed UTF-8 sequence
// (overlong, surrogate, above U+10FFFF, truncated) replaced by U+FFFD.
void AppendValidUtf8(const char* bytes, size_t size, std::string* out);

}  // namespace tern
