// The added tokens of a byte-level BPE tokenizer (tokenizer.json "added_tokens": special tokens
// such as <|endoftext|>, and others): found in the text before anything else, never split,
// matched as Hugging Face's Rust tokenizers match them (AddedVocabulary): leftmost-longest, in
// two passes (first the tokens with normalized = false on the text, then those with normalized
// = true in the text between), lstrip / rstrip absorbing the white space beside a token.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace tern {
namespace schema {
struct AddedToken;
struct ByteLevelBpe;
}  // namespace schema

namespace bpe {

// Receives what a pass finds, in text order: the text between tokens (Gap) and each token.
class AddedTokenSink {
 public:
  virtual Status Gap(const uint8_t* text, size_t size) = 0;
  virtual Status Token(int32_t id) = 0;

 protected:
  ~AddedTokenSink() = default;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // Checks the table (ids inside the vocabulary, sorted and unique; contents non-empty, valid
  // UTF-8, sorted and unique through added_by_content) and indexes it by first byte.
  Status Init(const schema::ByteLevelBpe& bpe, int32_t vocab_size);

  size_t size() const { return count_; }
  // Whether id is a special added token (binary search by id).
  bool IsSpecial(int32_t id) const;

  // One pass over text: the tokens whose `normalized` flag equals `normalized`. Without
  // parse_special a special token found is text (and no token is looked for inside it).
  Status Split(const uint8_t* text, size_t size, bool normalized, bool parse_special,
               AddedTokenSink* sink) const;

 private:
  // The longest token of the pass that starts at text[pos], or nullptr.
  const schema::AddedToken* LongestAt(const uint8_t* text, size_t size, size_t pos,
                                      bool normalized) const;

  const schema::ByteLevelBpe* bpe_ = nullptr;
  size_t count_ = 0;
  // Tokens whose content starts with byte b: added_by_content[first_[b] .. first_[b + 1]).
  uint32_t first_[257] = {};
};

}  // namespace bpe
}  // namespace tern
