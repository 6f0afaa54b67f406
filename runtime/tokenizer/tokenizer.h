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

class Model;

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // Parses a serialized SentencePiece ModelProto (e.g. Model::source_tokenizer()).
  Status Load(Span<const uint8_t> serialized_model);
  bool loaded() const { return processor_ != nullptr; }
  // A vocabulary map (format 1.8, Tokenizer.mapped): piece p is the model's id model_ids[p]
  // (-1: not in the model's vocabulary, encoded as unk_id). Checked here: one entry per piece,
  // each -1 or inside [0, model_vocab), each model id at most once, unk_id inside. After it,
  // every id this object takes or gives is a model id; model ids no piece maps to (fairseq's
  // language codes, <mask>) decode to nothing. The maps are built here, not per call.
  Status SetVocabularyMap(Span<const int32_t> model_ids, int32_t model_vocab, int32_t unk_id);
  // Load + SetVocabularyMap from a format 1.8 file's Tokenizer.mapped (unk_id: the config's).
  Status LoadMapped(const Model& model);
  // The target side's (format 1.9: its own model and map; 1.8: the shared one).
  Status LoadMappedTarget(const Model& model);
  bool mapped() const { return !piece_to_model_.empty(); }

  // Encodes UTF-8 text to ids and appends eos_id when append_eos. Invalid UTF-8 is an error that
  // names the byte offset.
  Status Encode(const std::string& text, bool append_eos, int32_t eos_id,
                std::vector<int32_t>* ids) const;
  // Decodes ids to text (control ids such as EOS/BOS/pad are dropped by SentencePiece).
  Status Decode(const int32_t* ids, size_t count, std::string* text) const;
  // The model's vocabulary (mapped) or the pieces' count.
  int32_t vocab_size() const;
  // The model's BOS id (-1 when it has none).
  int32_t bos_id() const;
  // The model's EOS id (-1 when it has none).
  int32_t eos_id() const;
  // The bytes `id` streams as, appended to *bytes: the piece with U+2581 as a space (the first
  // piece of a text keeps its space: a continuation follows its prompt), a byte piece <0xAB> as
  // that byte, the unknown piece as " \u2047 " (SentencePiece's default surface), a control
  // piece (<s>, </s>, padding) as nothing, or as its piece text when print_control.
  Status PieceBytes(int32_t id, bool print_control, std::string* bytes) const;

 private:
  // The piece of a model id, -1 when none (mapped only).
  int32_t PieceOf(int32_t id) const;

  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  std::vector<int32_t> piece_to_model_;  // empty: piece ids are model ids
  std::vector<int32_t> model_to_piece_;
  int32_t unk_id_ = 0;
};

}  // namespace tern
