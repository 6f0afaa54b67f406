// Hugging Face MarianMT's tokenizer files (OPUS-MT): source.spm and target.spm, two SentencePiece
// models, and vocab.json, the model's one vocabulary (piece -> model id) that both are numbered
// by. Neither model's own ids are the model's, so each side is stored with its map (format 1.9,
// Tokenizer.mapped + Tokenizer.target_mapped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/config.h"

namespace tern::convert {

struct MarianTokenizers {
  std::vector<uint8_t> source, target;          // serialized SentencePiece models
  std::vector<int32_t> source_ids, target_ids;  // piece p -> model id (vocab.json's)
  std::string source_path, target_path, vocab_path;
};

// Whether `dir` holds any of source.spm / target.spm (then ReadMarianTokenizers must be called).
bool MarianTokenizersBeside(const std::string& dir);

// Reads DIR/source.spm, DIR/target.spm and DIR/vocab.json. Every piece of each model must be in
// vocab.json (Hugging Face's MarianTokenizer would silently make a missing one <unk>; tern
// refuses it by name), its id inside that side's vocabulary, and </s> / <unk> must be the
// config's eos / unk ids. Throws Error naming the file (a missing one: with --no-tokenizer's hint).
MarianTokenizers ReadMarianTokenizers(const std::string& dir, const ModelConfig& config);

}  // namespace tern::convert
