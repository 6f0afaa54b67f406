// The text path of a translation model, whichever kind the .tern file stores: its SentencePiece
// models (a source gets EOS appended; the target's control pieces are left out of a
// translation), or a byte-level BPE tokenizer serving both sides (BART's tokenizer.json: a
// source gets the post-processor's special tokens, <s> ... </s>, and EOS when they do not end
// with it; special tokens are left out of a translation). Used by `tern translate` and
// tern_translate_text. Allocates (std::vector / std::string, SentencePiece).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tern {

class Model;

class TranslationTokenizer {
 public:
  // The tokenizer stored in the model file; an error when it has none usable.
  Status Load(const Model& model);
  bool loaded() const { return loaded_; }
  bool byte_level_bpe() const { return is_bpe_; }

  // A source's ids (replacing *ids' contents), EOS last.
  Status Encode(const std::string& text, int32_t eos_id, std::vector<int32_t>* ids) const;
  // A translation's text (replacing *text), special tokens left out.
  Status Decode(const int32_t* ids, size_t count, std::string* text) const;

 private:
  bool loaded_ = false;
  bool is_bpe_ = false;
  BpeTokenizer bpe_;
  Tokenizer source_, target_;
};

}  // namespace tern
