// Serializes a model to the .tern format (schema/tern.fbs): the size-prefixed FlatBuffer, then
// each tensor's data at a 64-byte aligned offset. WriteModelFile never leaves a partial or
// unloadable file: it writes a temporary file, loads it back with the runtime, then renames.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "converter/quantize.h"
#include "converter/shortlist.h"
#include "converter/tokenizer/tokenizer_json.h"
#include "runtime/model/config.h"

namespace tern::convert {

struct TernContents {
  ModelConfig config;
  std::vector<EncodedTensor> tensors;     // any order; written sorted by name
  std::vector<uint8_t> source_tokenizer;  // serialized SentencePiece model, may be empty
  std::vector<uint8_t> target_tokenizer;  // empty: same as source
  // Non-empty: source_tokenizer's piece p is the model's id vocabulary_map[p] (-1: none), one
  // entry per piece, and it serves both sides: stored as Tokenizer.mapped, format 1.8.
  std::vector<int32_t> vocabulary_map;
  // Non-empty (with vocabulary_map): target_tokenizer's piece p is the model's id
  // target_vocabulary_map[p]; each side has its own model: Tokenizer.mapped (source) and
  // Tokenizer.target_mapped, kind SentencePieceMappedPair, format 1.9 (Marian's vocab.json).
  std::vector<int32_t> target_vocabulary_map;
  // A language model's SentencePiece model (source_tokenizer, no map) puts BOS before a prompt
  // and nothing after unless these say otherwise (tokenizer_config.json): then it is stored as
  // Tokenizer.specials, kind SentencePieceSpecials, format 1.10.
  bool prompt_add_bos = true;
  bool prompt_add_eos = false;
  bool NonDefaultPromptSpecials() const {
    return !source_tokenizer.empty() && vocabulary_map.empty() &&
           (!prompt_add_bos || prompt_add_eos);
  }
  // A byte-level BPE tokenizer (tokenizer.json) instead of SentencePiece models: format 1.4.
  std::optional<BpeTokenizerData> bpe_tokenizer;
  // The vocabulary shortlist: format 1.5, or 1.11 when written compact (Model.compact_shortlist,
  // 16-bit ids: whenever it has row ids and every one fits, unless shortlist_wide_ids asks for
  // the 1.5 form: tern convert --shortlist-ids 32).
  std::optional<ShortlistData> shortlist;
  bool shortlist_wide_ids = false;
  bool CompactShortlist() const;
  // A multilingual model's language codes and tokens (any order; written sorted): format 1.7.
  std::vector<std::pair<std::string, int32_t>> languages;
  std::string converter_version;
  std::string source_digest;
  std::string source_format;
  std::string creation_options;
  // The files read to build it (checkpoint shards, config, tokenizers): the output may not be
  // one of them (converter/output_file.h).
  std::vector<std::string> inputs;
};

std::vector<uint8_t> SerializeModel(const TernContents& contents);

// The format minor version SerializeModel stamps: the oldest that has everything the file uses
// (the highest `since` of config_fields.h among the fields that differ from their default, the
// tokenizer's; at least 2).
uint16_t FormatMinor(const TernContents& contents);

// Serializes, verifies with tern::Model::Load and tern::ValidateArchitecture (what a session
// checks at Prepare), writes atomically by rename (never in place) under
// the rules of converter/output_file.h. Refuses to replace an existing file unless overwrite.
void WriteModelFile(const std::string& path, const TernContents& contents, bool overwrite);

}  // namespace tern::convert
