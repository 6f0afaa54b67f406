// Text <-> token ids with the SentencePiece model stored in the .tern file (no separate files
// at run time).
//
// Allocation: tokenization uses std::string / std::vector inside SentencePiece, so it
// allocates. The zero-allocation guarantee covers Session::TranslateIds (encoder, decoder,
// search) only; the text path is tokenize (allocates) -> TranslateIds (never allocates) ->
// detokenize (allocates). This library is separate from the runtime core so targets without
// SentencePiece link the core alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/tokenizer/utf8.h"  // FindInvalidUtf8, which Encode applies

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tern {

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Parses a serialized SentencePiece ModelProto (e.g. Model::source_tokenizer()).
  Status Load(Span<const uint8_t> serialized_model);
  bool loaded() const { return processor_ != nullptr; }

  // Encodes UTF-8 text to ids and appends eos_id when append_eos. Invalid UTF-8 is an error that
  // names the byte offset.
  Status Encode(const std::string& text, bool append_eos, int32_t eos_id,
                std::vector<int32_t>* ids) const;
  // Decodes ids to text (control ids such as EOS/BOS/pad are dropped by SentencePiece).
  Status Decode(const int32_t* ids, size_t count, std::string* text) const;
  int32_t vocab_size() const;
  // The model's BOS id (-1 when it has none).
  int32_t bos_id() const;
  // The bytes `id` streams as, appended to *bytes: the piece with U+2581 as a space (the first
  // piece of a text keeps its space: a continuation follows its prompt), a byte piece <0xAB> as
  // that byte, the unknown piece as " \u2047 " (SentencePiece's default surface), a control
  // piece (<s>, </s>, padding) as nothing, or as its piece text when print_control.
  Status PieceBytes(int32_t id, bool print_control, std::string* bytes) const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace tern
