// Test helper: small tokenizer.json documents built in code. Every byte has a token (ids 0..255
// in byte order), then the merges' results in merge order, then any extra vocabulary entries;
// added tokens get the ids after those. Tokens are written in their byte-level form, which
// for ASCII letters and digits is the text itself (the space is "Ġ").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "converter/tokenizer/byte_level.h"

namespace tern::testing {

struct MiniAdded {
  std::string content;
  bool special = true;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

struct MiniTokenizer {
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> extra_vocab;
  std::vector<MiniAdded> added;
  nlohmann::json pre_tokenizer = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  nlohmann::json post_processor = nullptr;
  nlohmann::json normalizer = nullptr;
  bool ignore_merges = false;

  nlohmann::json Json() const {
    nlohmann::json vocab = nlohmann::json::object();
    int id = 0;
    for (int b = 0; b < 256; ++b) {
      vocab[convert::ByteLevelEncode(std::string(1, static_cast<char>(b)))] = id++;
    }
    nlohmann::json merge_list = nlohmann::json::array();
    for (const auto& m : merges) {
      merge_list.push_back(m.first + " " + m.second);
      if (!vocab.contains(m.first + m.second)) vocab[m.first + m.second] = id++;
    }
    for (const auto& v : extra_vocab) vocab[v] = id++;
    nlohmann::json added_tokens = nlohmann::json::array();
    for (const auto& a : added) {
      added_tokens.push_back({{"id", id++},
                              {"content", a.content},
                              {"single_word", false},
                              {"lstrip", a.lstrip},
                              {"rstrip", a.rstrip},
                              {"normalized", a.normalized},
                              {"special", a.special}});
    }
    return {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added_tokens},
            {"normalizer", normalizer},
            {"pre_tokenizer", pre_tokenizer},
            {"post_processor", post_processor},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"ignore_merges", ignore_merges},
              {"vocab", vocab},
              {"merges", merge_list}}}};
  }
  std::string Text() const { return Json().dump(); }

  // The id of a token of the vocabulary (byte-level form), as Json() numbers them.
  int Id(const std::string& token) const { return Json()["model"]["vocab"][token].get<int>(); }
  int AddedId(size_t i) const { return Json()["added_tokens"][i]["id"].get<int>(); }
};

}  // namespace tern::testing
