// The tokenizer a text prompt goes through, whichever kind the .tern file stores: a byte-level
// BPE tokenizer (tokenizer.json: GPT-2, LLaMA 3, Qwen2, SmolLM) or a SentencePiece model
// (tokenizer.model: LLaMA 1/2, Mistral, TinyLlama). Two jobs: a prompt's ids, with the
// special tokens the tokenizer's configuration puts around a text, and each generated token's
// bytes for streaming.
//
// Special tokens around a prompt (add_special_tokens):
//   byte-level BPE  the post-processor's tokens stored in the file (prefix_ids / suffix_ids:
//                   TemplateProcessing's single template, e.g. LLaMA 3's <|begin_of_text|>;
//                   none for GPT-2, whose tokenizer.json has only a ByteLevel post-processor);
//   SentencePiece   the model's BOS piece before the text when it has one (bos_id >= 0), as
//                   Hugging Face's LlamaTokenizer (add_bos_token) and llama.cpp do; a
//                   SentencePieceSpecials file (format 1.10) says instead whether BOS goes
//                   before and EOS after (tokenizer_config.json's add_bos_token /
//                   add_eos_token, Model::prompt_specials).
// Special tokens of the output: BPE's special added tokens and SentencePiece's control pieces
// (<s>, </s>, padding) give no bytes unless `print_special`.
//
// Memory: the BPE path encodes into buffers this object keeps (they grow to the longest prompt
// so far and are then reused: a prompt no longer than an earlier one allocates nothing) and
// TokenBytes is a view of the file; SentencePiece allocates inside the library on every encode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/span.h"
#include "runtime/core/status.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tern {

class Model;

class TextTokenizer {
 public:
  enum class Kind { kNone, kByteLevelBpe, kSentencePiece };

  // The tokenizer stored in the model file; kFailedPrecondition when it has none.
  Status Load(const Model& model);
  Kind kind() const { return kind_; }
  const char* kind_name() const;

  // The prompt's ids (replacing *ids' contents). parse_special: special tokens written in the
  // text are those tokens (BPE only; SentencePiece never matches control pieces in text).
  Status EncodePrompt(const char* text, size_t size, bool add_special_tokens, bool parse_special,
                      std::vector<int32_t>* ids);

  // The bytes token `id` streams as (a view valid while this object and the model live): BPE,
  // the token's bytes; SentencePiece, the piece with U+2581 as a space, a byte piece <0xAB> as
  // that byte, the unknown piece as " \u2047 " (SentencePiece's default surface). A special
  // token gives nothing unless print_special (then its content / piece text); so does an id
  // the model has and the tokenizer does not (a vocabulary padded past the tokenizer's).
  Status TokenBytes(int32_t id, bool print_special, Span<const uint8_t>* bytes);

  // The most bytes TokenBytes gives for any id (special tokens printed): what the streaming
  // buffers are sized by, so that generating never grows them.
  size_t max_token_bytes() const { return max_token_bytes_; }

 private:
  Kind kind_ = Kind::kNone;
  bool add_bos_ = true;  // SentencePiece: Model::prompt_specials
  bool add_eos_ = false;
  BpeTokenizer bpe_;
  Tokenizer sentencepiece_;
  std::vector<uint8_t> workspace_;  // BPE encode workspace, grown to the longest prompt
  std::string piece_;               // SentencePiece: the bytes of the last TokenBytes
  size_t max_token_bytes_ = 0;
};

}  // namespace tern
