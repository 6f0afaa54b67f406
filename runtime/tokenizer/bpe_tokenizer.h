// Text <-> ids with a Hugging Face byte-level BPE tokenizer (tokenizer.json as GPT-2, LLaMA 3,
// Qwen2 and SmolLM use it), stored in the .tern file by `tern convert` (schema ByteLevelBpe).
// Encoding, as the Rust tokenizers do it:
//   1. added tokens are found first (added_tokens.h) and never split;
//   2. the text between them is normalized (nfc.h, when the tokenizer has NFC) and
//      pre-tokenized (pre_tokenizer.h: the split patterns, Digits, ByteLevel's prefix space);
//   3. each piece's bytes are merged by rank (bpe_merge.h), or, with ignore_merges, a piece that
//      is a vocabulary token is that token.
// Decoding concatenates each token's bytes (the ByteLevel decoder's unicode-to-byte mapping was
// applied by the converter); text split inside a UTF-8 character comes back whole once the
// following token arrives (utf8_stream.h streams that).
//
// The tokenizer is a view of the model file's bytes: Load checks them and copies nothing, and
// Encode / Decode into caller buffers never allocate. The std::vector / std::string overloads
// are conveniences that do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/tokenizer/added_tokens.h"
#include "runtime/tokenizer/bpe_merge.h"
#include "runtime/tokenizer/pre_tokenizer.h"

namespace tern {

class Model;
namespace schema {
struct ByteLevelBpe;
}  // namespace schema

struct BpeEncodeOptions {
  // Add the post-processor's special tokens around the text (LLaMA 3's <|begin_of_text|>):
  // Hugging Face's add_special_tokens.
  bool add_special_tokens = false;
  // Match special added tokens in the text. false: "<|endoftext|>" typed by a user is text
  // (the Rust tokenizers' encode_special_tokens, llama.cpp's parse_special = false).
  bool parse_special = true;
};

class BpeTokenizer {
 public:
  BpeTokenizer() = default;

  // The model's byte-level BPE tokenizer; an error when the file has none or another kind.
  static Result<BpeTokenizer> FromModel(const Model& model);
  // Checks every table (sizes, sorting, ids inside the vocabulary, offsets inside the bytes) so
  // that nothing later can read out of bounds. The table must outlive the tokenizer.
  static Result<BpeTokenizer> FromTable(const schema::ByteLevelBpe& table);

  int32_t vocab_size() const { return vocab_size_; }
  size_t merge_count() const;
  size_t added_token_count() const { return added_.size(); }

  // The longest text Encode takes: about 700 MB, 16 MB on 32-bit targets (where the workspace
  // must fit in size_t).
  static size_t MaxTextBytes();
  // Workspace bytes Encode needs for text of `size` bytes: about 60 per byte, 200 with the NFC
  // normalizer; SIZE_MAX above MaxTextBytes().
  size_t EncodeWorkspaceBytes(size_t size) const;
  bool normalizes() const { return nfc_; }

  // Encodes valid UTF-8 (invalid input is an error naming the byte offset). *count gets the
  // number of ids; when that exceeds ids.size() the ids that fit are written and the status is
  // kOutOfRange. The workspace must hold EncodeWorkspaceBytes(size) bytes (any alignment).
  Status Encode(const char* text, size_t size, const BpeEncodeOptions& options, Span<int32_t> ids,
                size_t* count, Span<uint8_t> workspace) const;
  // The same into a vector (allocates); the ids replace its contents.
  Status Encode(const std::string& text, const BpeEncodeOptions& options,
                std::vector<int32_t>* ids) const;

  // The bytes token `id` decodes to (on its own not always whole UTF-8 characters).
  Status TokenBytes(int32_t id, Span<const uint8_t>* bytes) const;
  bool IsSpecial(int32_t id) const { return added_.IsSpecial(id); }

  // Appends the bytes of ids (leaving out special added tokens when skip_special) to *bytes.
  // They are exactly the text encoded; ids that split a character give bytes that are not
  // UTF-8 on their own (Hugging Face would show U+FFFD there).
  Status Decode(Span<const int32_t> ids, bool skip_special, std::string* bytes) const;

 private:
  Status EncodeInto(const uint8_t* text, size_t size, const BpeEncodeOptions& options,
                    bpe::IdWriter* out, Span<uint8_t> workspace) const;
  // The vocabulary token whose bytes are exactly these (vocab_by_bytes), or -1.
  int32_t FindByBytes(const uint8_t* bytes, size_t size) const;

  friend class BpeEncoding;
  const schema::ByteLevelBpe* table_ = nullptr;
  int32_t vocab_size_ = 0;
  bpe::PreTokenizer pre_tokenizer_;
  bpe::BpeMerger merger_;
  bpe::AddedTokenMatcher added_;
  bool nfc_ = false;
};

}  // namespace tern
