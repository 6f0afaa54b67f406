// Vocabulary maps: the model's id of each SentencePiece piece, for checkpoints whose ids are not
// the pieces' own (stored as Tokenizer.mapped, format 1.8; the runtime applies it both ways).
//   fairseq offset  NLLB-200, mBART: fairseq's dictionary is <s> 0, <pad> 1, </s> 2, <unk> 3,
//                   then the pieces (piece p is p + 1; SentencePiece's own <unk> / <s> / </s>
//                   are fairseq's), then the language codes and <mask> (not pieces)
//   vocab.json      M2M100: a JSON object piece -> id
//   dict.txt        a fairseq dictionary: one "piece count" line per entry after the four
//                   specials (entry i is id 4 + i)
// Every piece must be in the map: a missing one is an error naming it (never a silent <unk>).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::convert {

// The entries of a fairseq dict.txt in order (the first is id 4), each line's first field.
// Throws Error naming the file and line for an empty line or a repeated entry.
std::vector<std::string> ReadFairseqDict(const std::string& path);

enum class VocabularyRule { kFairseqOffset, kVocabJson, kFairseqDict };

struct SpecialIds {
  int32_t bos, pad, eos, unk;
};

// The map of the SentencePiece model `model` (serialized; `label` names it in errors) under
// `rule` (`map_path`: the vocab.json or dict.txt; unused for the offset rule). Each id inside
// [0, vocab) and at most once; SentencePiece's <unk> / <s> / </s> must map to the config's
// `special` ids (the model was trained with those). Throws Error naming the piece.
std::vector<int32_t> BuildVocabularyMap(const std::vector<uint8_t>& model, const std::string& label,
                                        VocabularyRule rule, const std::string& map_path,
                                        int32_t vocab, const SpecialIds& special);

}  // namespace tern::convert
