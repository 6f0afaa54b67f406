#include "runtime/tokenizer/added_tokens.h"

#include <cstring>

#include "runtime/tokenizer/unicode_classes.h"
#include "runtime/tokenizer/utf8.h"
#include "tern_generated.h"

namespace tern::bpe {

namespace {

int CompareBytes(const flatbuffers::String* a, const flatbuffers::String* b) {
  const size_t n = a->size() < b->size() ? a->size() : b->size();
  const int c = std::memcmp(a->data(), b->data(), n);
  if (c != 0) return c;
  return a->size() < b->size() ? -1 : a->size() > b->size() ? 1 : 0;
}

bool IsSpaceAt(const uint8_t* text, size_t size, size_t pos, size_t* length) {
  return unicode::ClassOf(DecodeUtf8(text, size, pos, length)) == unicode::CharClass::kWhitespace;
}

}  // namespace

Status AddedTokenMatcher::Init(const schema::ByteLevelBpe& bpe, int32_t vocab_size) {
  const auto* tokens = bpe.added_tokens();
  const auto* order = bpe.added_by_content();
  const size_t count = tokens ? tokens->size() : 0;
  if ((order ? order->size() : 0) != count) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer: %zu added tokens but %zu entries in added_by_content", count,
                         static_cast<size_t>(order ? order->size() : 0));
  }
  for (size_t i = 0; i < count; ++i) {
    const schema::AddedToken* t = tokens->Get(i);
    if (t->id() < 0 || t->id() >= vocab_size) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: added token %zu has id %d, outside the %d tokens", i,
                           t->id(), vocab_size);
    }
    if (i > 0 && tokens->Get(i - 1)->id() >= t->id()) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: added tokens are not sorted by id (id %d after %d)", t->id(),
                           tokens->Get(i - 1)->id());
    }
    if (t->content() == nullptr || t->content()->size() == 0 ||
        FindInvalidUtf8(t->content()->c_str(), t->content()->size()) >= 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: added token %d has an empty or invalid UTF-8 content",
                           t->id());
    }
  }
  for (size_t k = 0; k < count; ++k) {
    const int32_t index = order->Get(k);
    if (index < 0 || static_cast<size_t>(index) >= count) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: added_by_content[%zu] = %d is not an added token", k, index);
    }
    // Strictly increasing contents also make the order a permutation.
    if (k > 0 && CompareBytes(tokens->Get(order->Get(k - 1))->content(),
                              tokens->Get(index)->content()) >= 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: added token contents are not sorted and unique at %zu", k);
    }
  }
  bpe_ = &bpe;
  count_ = count;
  // first_[b]: the first token (in content order) whose first byte is >= b.
  size_t k = 0;
  for (int b = 0; b <= 256; ++b) {
    while (k < count && static_cast<uint8_t>(tokens->Get(order->Get(k))->content()->Get(0)) < b) {
      ++k;
    }
    first_[b] = static_cast<uint32_t>(k);
  }
  return Status::Ok();
}

bool AddedTokenMatcher::IsSpecial(int32_t id) const {
  if (count_ == 0) return false;
  const auto* tokens = bpe_->added_tokens();
  size_t lo = 0, hi = count_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (tokens->Get(mid)->id() < id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < count_ && tokens->Get(lo)->id() == id && tokens->Get(lo)->special();
}

const schema::AddedToken* AddedTokenMatcher::LongestAt(const uint8_t* text, size_t size, size_t pos,
                                                       bool normalized) const {
  const auto* tokens = bpe_->added_tokens();
  const auto* order = bpe_->added_by_content();
  const schema::AddedToken* best = nullptr;
  size_t best_size = 0;
  for (uint32_t k = first_[text[pos]]; k < first_[text[pos] + 1]; ++k) {
    const schema::AddedToken* t = tokens->Get(order->Get(k));
    if (t->normalized() != normalized) continue;
    const size_t n = t->content()->size();
    if (n > best_size && n <= size - pos && std::memcmp(t->content()->data(), text + pos, n) == 0) {
      best = t;
      best_size = n;
    }
  }
  return best;
}

Status AddedTokenMatcher::Split(const uint8_t* text, size_t size, bool normalized,
                                bool parse_special, AddedTokenSink* sink) const {
  size_t done = 0;  // the text before it went to the sink (as gaps or absorbed by tokens)
  size_t pos = 0;
  while (count_ > 0 && pos < size) {
    const schema::AddedToken* t = LongestAt(text, size, pos, normalized);
    if (t == nullptr) {
      ++pos;
      continue;
    }
    if (t->special() && !parse_special) {
      // Text, as the Rust tokenizers' encode_special_tokens has it: the match is found and
      // dropped, so no other token is looked for inside it.
      pos += t->content()->size();
      continue;
    }
    size_t start = pos;
    size_t stop = pos + t->content()->size();
    if (t->lstrip()) {
      // Back over the white space before the token, but not into what an earlier one took.
      while (start > done) {
        size_t begin = start - 1;
        while (begin > done && (text[begin] & 0xC0) == 0x80) --begin;
        size_t length;
        if (!IsSpaceAt(text, size, begin, &length)) break;
        start = begin;
      }
    }
    if (t->rstrip()) {
      size_t length;
      while (stop < size && IsSpaceAt(text, size, stop, &length)) stop += length;
    }
    if (done < start) TERN_RETURN_IF_ERROR(sink->Gap(text + done, start - done));
    TERN_RETURN_IF_ERROR(sink->Token(t->id()));
    if (stop > done) done = stop;
    // The next match is searched after this one's content, as Rust's matcher finds all matches
    // in the original text before stripping.
    pos += t->content()->size();
  }
  if (done < size) TERN_RETURN_IF_ERROR(sink->Gap(text + done, size - done));
  return Status::Ok();
}

}  // namespace tern::bpe
