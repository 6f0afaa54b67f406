#include "converter/tokenizer/vocab_map.h"

#include <sentencepiece_processor.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "converter/error.h"
#include "converter/readers/file_bytes.h"

namespace tern::convert {

std::vector<std::string> ReadFairseqDict(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot be read");
  std::vector<std::string> entries;
  std::map<std::string, size_t> seen;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    std::istringstream fields(line);
    std::string piece;
    if (!(fields >> piece)) throw Error(path + ":" + std::to_string(n) + ": empty line");
    if (!seen.emplace(piece, n).second) {
      throw Error(path + ":" + std::to_string(n) + ": \"" + piece + "\" is also line " +
                  std::to_string(seen[piece]));
    }
    entries.push_back(piece);
  }
  return entries;
}

namespace {

// piece text -> model id of the vocab.json / dict.txt, fairseq's specials included.
std::map<std::string, int32_t> ReadTable(VocabularyRule rule, const std::string& path) {
  std::map<std::string, int32_t> table;
  if (rule == VocabularyRule::kFairseqDict) {
    table = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
    const auto entries = ReadFairseqDict(path);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!table.emplace(entries[i], static_cast<int32_t>(4 + i)).second) {
        throw Error(path + ":" + std::to_string(i + 1) + ": \"" + entries[i] +
                    "\" is one of fairseq's special tokens");
      }
    }
    return table;
  }
  const auto file = FileBytes::Open(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(file->data(), file->data() + file->size());
  } catch (const std::exception& e) {
    throw Error(path + ": not JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw Error(path + ": not a JSON object of piece -> id");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer()) {
      throw Error(path + ": \"" + it.key() + "\": the id is not an integer");
    }
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > INT32_MAX) {
      throw Error(path + ": \"" + it.key() + "\": id " + std::to_string(id) +
                  " is negative or too large");
    }
    table[it.key()] = static_cast<int32_t>(id);
  }
  return table;
}

}  // namespace

std::vector<int32_t> BuildVocabularyMap(const std::vector<uint8_t>& model, const std::string& label,
                                        VocabularyRule rule, const std::string& map_path,
                                        int32_t vocab, const SpecialIds& special) {
  sentencepiece::SentencePieceProcessor spm;
  const auto status = spm.LoadFromSerializedProto(
      absl::string_view(reinterpret_cast<const char*>(model.data()), model.size()));
  if (!status.ok()) {
    throw Error(label + ": not a SentencePiece model (" + status.ToString() + ")");
  }
  std::map<std::string, int32_t> table;
  if (rule != VocabularyRule::kFairseqOffset) table = ReadTable(rule, map_path);
  const std::string source =
      rule == VocabularyRule::kFairseqOffset ? "fairseq's offset rule" : map_path;
  // fairseq's dictionary (fairseq/data/dictionary.py): the config must agree, checked below.
  const std::map<std::string, int32_t> fairseq = {
      {"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  const int32_t pieces = spm.GetPieceSize();
  std::vector<int32_t> ids(static_cast<size_t>(pieces), -1);
  std::map<int32_t, int32_t> piece_of;  // model id -> piece, for the "twice" message
  for (int32_t p = 0; p < pieces; ++p) {
    const std::string& piece = spm.IdToPiece(p);
    int32_t id = -1;
    if (rule == VocabularyRule::kFairseqOffset) {
      // Hugging Face's NllbTokenizer / MBart50Tokenizer: fairseq's specials by text, else the
      // piece id + 1, SentencePiece's <unk> (id 0) as fairseq's <unk>.
      auto f = fairseq.find(piece);
      id = f != fairseq.end() ? f->second : spm.IsUnknown(p) ? 3 : p + 1;
    } else {
      auto t = table.find(piece);
      if (t == table.end()) {
        throw Error(label + ": piece \"" + piece + "\" (id " + std::to_string(p) + ") is not in " +
                    map_path);
      }
      id = t->second;
    }
    if (id >= vocab) {
      throw Error(label + ": piece \"" + piece + "\" is id " + std::to_string(id) + " under " +
                  source + ", outside the model's vocabulary of " + std::to_string(vocab));
    }
    if (!piece_of.emplace(id, p).second) {
      throw Error(label + ": pieces \"" + spm.IdToPiece(piece_of[id]) + "\" and \"" + piece +
                  "\" are both id " + std::to_string(id) + " under " + source);
    }
    ids[p] = id;
  }
  // SentencePiece's own specials must be the config's: the model was trained with those ids.
  const struct {
    int32_t piece;
    int32_t want;
    const char* name;
  } checks[] = {{spm.unk_id(), special.unk, "unk_token_id"},
                {spm.bos_id(), special.bos, "bos_token_id"},
                {spm.eos_id(), special.eos, "eos_token_id"}};
  for (const auto& c : checks) {
    if (c.piece < 0 || c.want < 0) continue;
    if (ids[c.piece] != c.want) {
      throw Error(label + ": piece \"" + spm.IdToPiece(c.piece) + "\" is id " +
                  std::to_string(ids[c.piece]) + " under " + source + ", but the config's " +
                  c.name + " is " + std::to_string(c.want));
    }
  }
  return ids;
}

}  // namespace tern::convert
