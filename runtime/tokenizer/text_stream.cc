#include "runtime/tokenizer/text_stream.h"

#include <algorithm>

#include "runtime/tokenizer/utf8.h"

namespace tern {

void AppendValidUtf8(const char* bytes, size_t size, std::string* out) {
  while (size > 0) {
    const int64_t bad = FindInvalidUtf8(bytes, size);
    if (bad < 0) {
      out->append(bytes, size);
      return;
    }
    out->append(bytes, static_cast<size_t>(bad));
    out->append("\xEF\xBF\xBD");  // U+FFFD
    bytes += bad + 1;
    size -= static_cast<size_t>(bad) + 1;
  }
}

Status TextStream::Start(const std::vector<std::string>& stop, size_t max_token_bytes) {
  max_stop_ = 0;
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) {
      return Status::Error(StatusCode::kInvalidArgument, "stop string %zu is empty", i);
    }
    max_stop_ = std::max(max_stop_, stop[i].size());
  }
  max_token_bytes_ = max_token_bytes;
  raw_.reserve(Utf8Stream::OutputBytes(max_token_bytes));
  chars_.reserve(3 * Utf8Stream::OutputBytes(max_token_bytes));
  held_.reserve(MaxPieceBytes());
  utf8_ = Utf8Stream();
  stop_ = stop;
  held_.clear();
  stopped_ = false;
  return Status::Ok();
}

void TextStream::Next(Span<const uint8_t> bytes, std::string* text, bool* stopped) {
  text->clear();
  *stopped = stopped_;
  if (stopped_) return;
  raw_.resize(Utf8Stream::OutputBytes(bytes.size()));
  size_t size = 0;
  // The output is sized by OutputBytes: Next cannot fail.
  (void)utf8_.Next(bytes, Span<char>(raw_.data(), raw_.size()), &size);
  chars_.clear();
  AppendValidUtf8(raw_.data(), size, &chars_);
  Match(chars_.data(), chars_.size(), text);
  *stopped = stopped_;
}

void TextStream::Finish(std::string* text) {
  text->clear();
  if (stopped_) return;
  char tail[4];
  const size_t size = utf8_.Flush(Span<char>(tail, sizeof tail));
  chars_.clear();
  AppendValidUtf8(tail, size, &chars_);
  Match(chars_.data(), chars_.size(), text);
  if (!stopped_) text->append(held_);  // no token can complete a stop string any more
  held_.clear();
}

void TextStream::Match(const char* chunk, size_t size, std::string* text) {
  held_.append(chunk, size);
  if (stop_.empty()) {
    text->append(held_);
    held_.clear();
    return;
  }
  // The earliest complete stop string ends the stream: the text before it is final.
  size_t first = std::string::npos;
  for (const std::string& s : stop_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    text->append(held_, 0, first);
    held_.clear();
    stopped_ = true;
    return;
  }
  // Otherwise hold the longest suffix that begins some stop string; the rest is final. (It
  // starts at a character boundary: a stop string is text, and held_ holds whole characters.)
  size_t keep = 0;
  for (const std::string& s : stop_) {
    const size_t most = std::min(s.size() - 1, held_.size());
    for (size_t n = most; n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  text->append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
}

}  // namespace tern
