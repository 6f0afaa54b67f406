#include "runtime/tokenizer/utf8_stream.h"

#include <cstring>

#include "runtime/tokenizer/utf8.h"

namespace tern {

Status Utf8Stream::Next(Span<const uint8_t> bytes, Span<char> out, size_t* size) {
  *size = 0;
  const size_t total = pending_size_ + bytes.size();
  auto at = [&](size_t i) { return i < pending_size_ ? pending_[i] : bytes[i - pending_size_]; };
  // Hold back the last character if it is a lead byte followed by fewer continuation bytes
  // than it needs (looking back at most 3 bytes: a character has at most 4).
  size_t keep = 0;
  for (size_t back = 1; back <= 3 && back <= total; ++back) {
    const uint8_t c = at(total - back);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    if (Utf8SequenceLength(c) > back) keep = back;
    break;
  }
  const size_t emit = total - keep;
  if (out.size() < emit) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "utf8 stream: %zu bytes to write, room for %zu", emit, out.size());
  }
  for (size_t i = 0; i < emit; ++i) out[i] = static_cast<char>(at(i));
  uint8_t held[4];
  for (size_t i = 0; i < keep; ++i) held[i] = at(emit + i);
  std::memcpy(pending_, held, keep);
  pending_size_ = keep;
  *size = emit;
  return Status::Ok();
}

size_t Utf8Stream::Flush(Span<char> out) {
  const size_t n = pending_size_ < out.size() ? pending_size_ : out.size();
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(pending_[i]);
  pending_size_ = 0;
  return n;
}

}  // namespace tern
