#include "converter/tokenizer/tokenizer_json.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "converter/error.h"
#include "converter/readers/file_bytes.h"
#include "converter/tokenizer/byte_level.h"
#include "runtime/tokenizer/nfc.h"
#include "runtime/tokenizer/pre_tokenizer.h"

namespace tern::convert {

namespace {

using Json = nlohmann::json;
using bpe::PreTokenizerStep;

// The split patterns tern implements (runtime/tokenizer/split_patterns.h), as tokenizer.json
// spells them.
const char kGpt2Pattern[] =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
const char kLlama3Pattern[] =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
const char kQwen2Pattern[] =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

std::string Quote(const std::string& s) {
  const std::string shown = s.size() > 80 ? s.substr(0, 77) + "..." : s;
  return Json(shown).dump(-1, ' ', false, Json::error_handler_t::replace);
}

class Reader {
 public:
  explicit Reader(const std::string& label) : label_(label) {}

  [[noreturn]] void Fail(const std::string& where, const std::string& what) const {
    throw Error(label_ + ": " + where + ": " + what);
  }

  const Json& Object(const Json& j, const std::string& where) const {
    if (!j.is_object()) Fail(where, "expected an object, found " + std::string(j.type_name()));
    return j;
  }
  const Json& Array(const Json& j, const std::string& where) const {
    if (!j.is_array()) Fail(where, "expected an array, found " + std::string(j.type_name()));
    return j;
  }
  std::string String(const Json& j, const std::string& where) const {
    if (!j.is_string()) Fail(where, "expected a string, found " + std::string(j.type_name()));
    return j.get<std::string>();
  }
  bool Bool(const Json& obj, const char* key, bool fallback, const std::string& where) const {
    if (!obj.contains(key) || obj[key].is_null()) return fallback;
    if (!obj[key].is_boolean()) Fail(where + "." + key, "expected true or false");
    return obj[key].get<bool>();
  }
  int32_t Id(const Json& j, const std::string& where) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > 0x7FFFFFFE) {
      Fail(where, "expected a token id (an integer from 0 to 2^31 - 2), found " + j.dump());
    }
    return static_cast<int32_t>(j.get<int64_t>());
  }
  std::string Type(const Json& obj, const std::string& where) const {
    Object(obj, where);
    if (!obj.contains("type")) Fail(where, "no \"type\"");
    return String(obj["type"], where + ".type");
  }
  // Unknown keys are refused: tern cannot know that a field it has never seen changes nothing.
  void Keys(const Json& obj, const std::string& where,
            std::initializer_list<const char*> known) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool found = false;
      for (const char* k : known) found = found || it.key() == k;
      if (!found) Fail(where, "unknown field " + Quote(it.key()) + " (tern does not implement it)");
    }
  }

 private:
  const std::string& label_;
};

struct Parsed {
  std::unordered_map<std::string, int32_t> vocab;  // model.vocab
  std::vector<std::pair<std::string, std::string>> merges;
  bool ignore_merges = false;
};

Parsed ReadModel(const Reader& r, const Json& model) {
  const std::string type = r.Type(model, "model");
  if (type != "BPE") {
    r.Fail("model.type", Quote(type) + " is not supported: tern reads byte-level BPE tokenizers");
  }
  r.Keys(model, "model",
         {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
          "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"});
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    if (!model["dropout"].is_number() || model["dropout"].get<double>() != 0.0) {
      r.Fail("model.dropout", model["dropout"].dump() + ": BPE dropout is not implemented");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() &&
        !(model[key].is_string() && model[key].get<std::string>().empty())) {
      r.Fail(std::string("model.") + key, model[key].dump() + " is not implemented");
    }
  }
  if (r.Bool(model, "byte_fallback", false, "model")) {
    r.Fail("model.byte_fallback", "true is not implemented (byte-level BPE has every byte)");
  }
  r.Bool(model, "fuse_unk", false, "model");  // no unknown token can occur: every byte has one
  if (model.contains("unk_token") && !model["unk_token"].is_null()) {
    r.String(model["unk_token"], "model.unk_token");
  }
  Parsed p;
  p.ignore_merges = r.Bool(model, "ignore_merges", false, "model");
  if (!model.contains("vocab")) r.Fail("model", "no \"vocab\"");
  const Json& vocab = r.Object(model["vocab"], "model.vocab");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    p.vocab[it.key()] = r.Id(it.value(), "model.vocab[" + Quote(it.key()) + "]");
  }
  if (!model.contains("merges")) r.Fail("model", "no \"merges\"");
  const Json& merges = r.Array(model["merges"], "model.merges");
  p.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    const Json& m = merges[i];
    if (m.is_string()) {  // "left right", exactly one space (the Rust tokenizers' rule)
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        r.Fail(where, Quote(s) + " is not two tokens separated by one space");
      }
      p.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2) {
      p.merges.emplace_back(r.String(m[0], where + "[0]"), r.String(m[1], where + "[1]"));
    } else {
      r.Fail(where, "expected \"left right\" or [left, right], found " + m.dump());
    }
  }
  return p;
}

std::vector<AddedTokenData> ReadAddedTokens(const Reader& r, const Json& root) {
  std::vector<AddedTokenData> out;
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return out;
  const Json& list = r.Array(root["added_tokens"], "added_tokens");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    const Json& t = r.Object(list[i], where);
    r.Keys(t, where, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    AddedTokenData a;
    if (!t.contains("id") || !t.contains("content")) r.Fail(where, "needs \"id\" and \"content\"");
    a.id = r.Id(t["id"], where + ".id");
    a.content = r.String(t["content"], where + ".content");
    if (a.content.empty()) r.Fail(where + ".content", "empty");
    a.special = r.Bool(t, "special", false, where);
    a.lstrip = r.Bool(t, "lstrip", false, where);
    a.rstrip = r.Bool(t, "rstrip", false, where);
    a.normalized = r.Bool(t, "normalized", !a.special, where);
    if (r.Bool(t, "single_word", false, where)) {
      r.Fail(where + ".single_word", "true is not implemented (token " + Quote(a.content) + ")");
    }
    out.push_back(a);
  }
  return out;
}

void ReadNormalizer(const Reader& r, const Json& root, BpeTokenizerData* out) {
  if (!root.contains("normalizer") || root["normalizer"].is_null()) return;
  const Json& n = root["normalizer"];
  const std::string type = r.Type(n, "normalizer");
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array() &&
      n["normalizers"].empty()) {
    out->notes.push_back("normalizer: an empty Sequence (nothing to do)");
    return;
  }
  if (type == "NFC") {
    r.Keys(n, "normalizer", {"type"});
    out->nfc = true;
    return;
  }
  r.Fail("normalizer.type", Quote(type) + " is not implemented");
}

std::string Nfc(const std::string& text) {
  std::vector<uint32_t> work(unicode::NfcWorkCodePoints(text.size()));
  std::vector<uint8_t> out(unicode::NfcOutputBytes(text.size()));
  size_t size = 0;
  const Status s = unicode::NormalizeNfc(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                         Span<uint32_t>(work.data(), work.size()),
                                         Span<uint8_t>(out.data(), out.size()), &size);
  if (!s.ok()) throw Error(std::string("internal: ") + s.message());
  return std::string(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(size));
}

void ReadPreTokenizer(const Reader& r, const Json& p, const std::string& where,
                      BpeTokenizerData* out, bool* byte_level) {
  if (p.is_null()) {
    r.Fail(where, "null: a byte-level BPE tokenizer needs the ByteLevel pre-tokenizer");
  }
  const std::string type = r.Type(p, where);
  if (*byte_level) {
    r.Fail(where, Quote(type) + " after ByteLevel is not implemented (ByteLevel must be last)");
  }
  auto step = [out](PreTokenizerStep s) { out->pre_tokenizer.push_back(static_cast<uint8_t>(s)); };
  if (type == "Sequence") {
    r.Keys(p, where, {"type", "pretokenizers"});
    if (!p.contains("pretokenizers")) r.Fail(where, "no \"pretokenizers\"");
    const Json& list = r.Array(p["pretokenizers"], where + ".pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) {
      ReadPreTokenizer(r, list[i], where + ".pretokenizers[" + std::to_string(i) + "]", out,
                       byte_level);
    }
  } else if (type == "Split") {
    r.Keys(p, where, {"type", "pattern", "behavior", "invert"});
    if (!p.contains("pattern")) r.Fail(where, "no \"pattern\"");
    const Json& pattern = r.Object(p["pattern"], where + ".pattern");
    if (!pattern.contains("Regex") || pattern.size() != 1) {
      r.Fail(where + ".pattern", pattern.dump() +
                                     " is not implemented (only the Regex patterns "
                                     "of GPT-2, LLaMA 3 and Qwen2)");
    }
    const std::string regex = r.String(pattern["Regex"], where + ".pattern.Regex");
    if (regex == kGpt2Pattern) {
      step(PreTokenizerStep::kSplitGpt2);
    } else if (regex == kLlama3Pattern) {
      step(PreTokenizerStep::kSplitLlama3);
    } else if (regex == kQwen2Pattern) {
      step(PreTokenizerStep::kSplitQwen2);
    } else {
      r.Fail(where + ".pattern.Regex", Quote(regex) +
                                           " is not implemented (tern matches the patterns of "
                                           "GPT-2, LLaMA 3 and Qwen2, exactly as written there)");
    }
    const std::string behavior =
        p.contains("behavior") ? r.String(p["behavior"], where + ".behavior") : "";
    if (behavior != "Isolated") {
      r.Fail(where + ".behavior", Quote(behavior) + " is not implemented (only \"Isolated\")");
    }
    if (r.Bool(p, "invert", false, where)) r.Fail(where + ".invert", "true is not implemented");
  } else if (type == "Digits") {
    r.Keys(p, where, {"type", "individual_digits"});
    step(r.Bool(p, "individual_digits", false, where) ? PreTokenizerStep::kDigitsIndividual
                                                      : PreTokenizerStep::kDigitsContiguous);
  } else if (type == "ByteLevel") {
    r.Keys(p, where, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    // Required, as in the Rust tokenizers (the JavaScript ones default it to false).
    if (!p.contains("add_prefix_space")) r.Fail(where, "no \"add_prefix_space\"");
    if (r.Bool(p, "add_prefix_space", false, where)) step(PreTokenizerStep::kPrefixSpace);
    if (r.Bool(p, "use_regex", true, where)) step(PreTokenizerStep::kSplitGpt2);
    *byte_level = true;
  } else {
    r.Fail(where + ".type", Quote(type) + " is not implemented");
  }
}

void ReadDecoder(const Reader& r, const Json& root) {
  if (!root.contains("decoder") || root["decoder"].is_null()) {
    r.Fail("decoder", "null: tern decodes byte-level BPE with the ByteLevel decoder");
  }
  const std::string type = r.Type(root["decoder"], "decoder");
  if (type != "ByteLevel") r.Fail("decoder.type", Quote(type) + " is not implemented");
  r.Keys(root["decoder"], "decoder", {"type", "add_prefix_space", "trim_offsets", "use_regex"});
}

// The special tokens a post-processor puts around a single text.
struct Template {
  bool seen = false;
  std::vector<int32_t> prefix, suffix;
};

void ReadPostProcessor(const Reader& r, const Json& p, const std::string& where, Template* t) {
  if (p.is_null()) return;
  const std::string type = r.Type(p, where);
  auto once = [&] {
    if (t->seen) r.Fail(where, "a second post-processor that adds tokens is not implemented");
    t->seen = true;
  };
  if (type == "ByteLevel") {  // offsets only
    r.Keys(p, where, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
  } else if (type == "Sequence") {
    r.Keys(p, where, {"type", "processors"});
    if (!p.contains("processors")) r.Fail(where, "no \"processors\"");
    const Json& list = r.Array(p["processors"], where + ".processors");
    for (size_t i = 0; i < list.size(); ++i) {
      ReadPostProcessor(r, list[i], where + ".processors[" + std::to_string(i) + "]", t);
    }
  } else if (type == "TemplateProcessing") {
    once();
    r.Keys(p, where, {"type", "single", "pair", "special_tokens"});
    if (!p.contains("single")) r.Fail(where, "no \"single\"");
    const Json& single = r.Array(p["single"], where + ".single");
    const Json empty = Json::object();
    const Json& specials = p.contains("special_tokens")
                               ? r.Object(p["special_tokens"], where + ".special_tokens")
                               : empty;
    bool sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string item_where = where + ".single[" + std::to_string(i) + "]";
      const Json& item = r.Object(single[i], item_where);
      if (item.size() == 1 && item.contains("Sequence")) {
        const Json& s = r.Object(item["Sequence"], item_where + ".Sequence");
        if (sequence || !s.contains("id") || s["id"] != "A") {
          r.Fail(item_where, "the single template must hold the sequence $A once");
        }
        sequence = true;
      } else if (item.size() == 1 && item.contains("SpecialToken")) {
        const Json& s = r.Object(item["SpecialToken"], item_where + ".SpecialToken");
        const std::string name = s.contains("id") ? r.String(s["id"], item_where + ".id") : "";
        if (!specials.contains(name)) {
          r.Fail(item_where, "special token " + Quote(name) + " is not in special_tokens");
        }
        const Json& entry = r.Object(specials[name], where + ".special_tokens." + name);
        if (!entry.contains("ids")) r.Fail(where + ".special_tokens." + name, "no \"ids\"");
        for (const Json& id : r.Array(entry["ids"], where + ".special_tokens." + name + ".ids")) {
          (sequence ? t->suffix : t->prefix).push_back(r.Id(id, where + ".special_tokens"));
        }
      } else {
        r.Fail(item_where, item.dump() + " is not a SpecialToken or Sequence");
      }
    }
    if (!sequence) r.Fail(where + ".single", "no $A sequence");
  } else if (type == "RobertaProcessing" || type == "BertProcessing") {
    once();
    r.Keys(p, where, {"type", "sep", "cls", "trim_offsets", "add_prefix_space"});
    for (const char* key : {"cls", "sep"}) {
      if (!p.contains(key) || !p[key].is_array() || p[key].size() != 2) {
        r.Fail(where + "." + key, "expected [token, id]");
      }
      (std::string(key) == "cls" ? t->prefix : t->suffix)
          .push_back(r.Id(p[key][1], where + "." + key + "[1]"));
    }
  } else {
    r.Fail(where + ".type", Quote(type) + " is not implemented");
  }
}

// Ties model.vocab, the merges and the added tokens into per-id tables.
void Assemble(const Reader& r, Parsed& parsed, BpeTokenizerData* out) {
  std::map<int32_t, std::string> by_id;  // model.vocab, by id
  for (const auto& kv : parsed.vocab) {
    auto [it, inserted] = by_id.emplace(kv.second, kv.first);
    if (!inserted) {
      r.Fail("model.vocab", Quote(it->second) + " and " + Quote(kv.first) + " both have id " +
                                std::to_string(kv.second));
    }
  }
  int32_t size = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
  std::set<std::string> added_contents;
  for (size_t i = 1; i < out->added_tokens.size(); ++i) {
    if (out->added_tokens[i].id == out->added_tokens[i - 1].id) {
      r.Fail("added_tokens", "two tokens have id " + std::to_string(out->added_tokens[i].id));
    }
  }
  for (const AddedTokenData& a : out->added_tokens) {
    if (!added_contents.insert(a.content).second) {
      r.Fail("added_tokens", "two tokens are " + Quote(a.content));
    }
    const auto in_vocab = parsed.vocab.find(a.content);
    if (in_vocab != parsed.vocab.end() && in_vocab->second != a.id) {
      r.Fail("added_tokens", Quote(a.content) + " has id " + std::to_string(a.id) +
                                 " but model.vocab gives it " + std::to_string(in_vocab->second));
    }
    const auto same_id = by_id.find(a.id);
    if (same_id != by_id.end() && same_id->second != a.content) {
      r.Fail("added_tokens", Quote(a.content) + " has id " + std::to_string(a.id) +
                                 ", which model.vocab gives to " + Quote(same_id->second));
    }
    if (a.id + 1 > size) size = a.id + 1;
  }
  out->token_bytes.assign(size, std::string());
  out->byte_level.assign(size, false);
  std::vector<bool> present(size, false);
  for (const auto& kv : by_id) {
    out->byte_level[kv.first] = ByteLevelDecode(kv.second, &out->token_bytes[kv.first]);
    present[kv.first] = true;
  }
  for (const AddedTokenData& a : out->added_tokens) {
    // Decoding runs added tokens through the ByteLevel decoder too (Rust tokenizers'
    // Tokenizer::decode); "<|endoftext|>" stands for itself either way.
    ByteLevelDecode(a.content, &out->token_bytes[a.id]);
    present[a.id] = true;
  }
  uint64_t total = 0;
  for (int32_t id = 0; id < size; ++id) {
    if (!present[id]) {
      r.Fail("model.vocab", "id " + std::to_string(id) +
                                " is neither in model.vocab nor in added_tokens (ids must be "
                                "0 .. " +
                                std::to_string(size - 1) + " without gaps)");
    }
    total += out->token_bytes[id].size();
  }
  if (total >= (uint64_t{1} << 32)) r.Fail("model.vocab", "4 GiB of token bytes or more");

  out->byte_tokens.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    const std::string text = ByteLevelEncode(std::string(1, static_cast<char>(b)));
    const auto it = parsed.vocab.find(text);
    if (it == parsed.vocab.end()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", b);
      r.Fail("model.vocab", std::string("no token for byte ") + hex + " (" + Quote(text) +
                                "): a byte-level vocabulary has all 256");
    }
    out->byte_tokens[b] = it->second;
  }

  std::set<std::pair<int32_t, int32_t>> pairs;
  size_t dead = 0;
  for (size_t i = 0; i < parsed.merges.size(); ++i) {
    const auto& m = parsed.merges[i];
    const std::string where =
        "model.merges[" + std::to_string(i) + "] " + Quote(m.first + " " + m.second);
    const auto left = parsed.vocab.find(m.first);
    const auto right = parsed.vocab.find(m.second);
    const auto result = parsed.vocab.find(m.first + m.second);
    if (left == parsed.vocab.end()) r.Fail(where, Quote(m.first) + " is not in model.vocab");
    if (right == parsed.vocab.end()) r.Fail(where, Quote(m.second) + " is not in model.vocab");
    if (result == parsed.vocab.end()) {
      r.Fail(where, "its result " + Quote(m.first + m.second) + " is not in model.vocab");
    }
    if (!pairs.insert({left->second, right->second}).second) r.Fail(where, "a second time");
    if (!out->byte_level[left->second] || !out->byte_level[right->second]) {
      ++dead;  // a side that is not byte-level text never occurs in BPE
      continue;
    }
    out->merges.push_back({left->second, right->second, result->second, static_cast<int32_t>(i)});
  }
  if (dead > 0) {
    out->notes.push_back(std::to_string(dead) +
                         " merges of tokens that are not byte-level text dropped (they never "
                         "apply)");
  }
  for (const auto* ids : {&out->prefix_ids, &out->suffix_ids}) {
    for (const int32_t id : *ids) {
      if (id >= size) {
        r.Fail("post_processor", "token id " + std::to_string(id) + " is outside the " +
                                     std::to_string(size) + " tokens");
      }
    }
  }
}

}  // namespace

std::string BpeTokenizerData::Describe() const {
  std::string steps;
  for (const uint8_t s : pre_tokenizer) {
    steps += (steps.empty() ? "" : ", ") +
             std::string(bpe::PreTokenizerStepName(static_cast<PreTokenizerStep>(s)));
  }
  std::string text = "byte-level BPE, " + std::to_string(vocab_size()) + " tokens (" +
                     std::to_string(added_tokens.size()) + " added), " +
                     std::to_string(merges.size()) + " merges, pre-tokenizer " +
                     (steps.empty() ? "none" : steps);
  if (ignore_merges) text += ", ignore_merges";
  if (nfc) text += ", normalizer NFC";
  return text;
}

BpeTokenizerData ParseTokenizerJson(const std::string& json, const std::string& label) {
  const Reader r(label);
  Json root;
  try {
    root = Json::parse(json);
  } catch (const Json::exception& e) {
    throw Error(label + ": not valid JSON (" + e.what() + ")");
  }
  r.Object(root, "the file");
  r.Keys(root, "the file",
         {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
          "post_processor", "decoder", "model"});
  BpeTokenizerData out;
  for (const char* key : {"truncation", "padding"}) {
    if (root.contains(key) && !root[key].is_null()) {
      out.notes.push_back(std::string(key) +
                          " settings are not stored (tern encodes whole texts, unpadded)");
    }
  }
  if (!root.contains("model")) r.Fail("the file", "no \"model\"");
  Parsed parsed = ReadModel(r, root["model"]);
  out.ignore_merges = parsed.ignore_merges;
  out.added_tokens = ReadAddedTokens(r, root);
  std::sort(out.added_tokens.begin(), out.added_tokens.end(),
            [](const AddedTokenData& a, const AddedTokenData& b) { return a.id < b.id; });
  ReadNormalizer(r, root, &out);
  if (!root.contains("pre_tokenizer")) r.Fail("the file", "no \"pre_tokenizer\"");
  bool byte_level = false;
  ReadPreTokenizer(r, root["pre_tokenizer"], "pre_tokenizer", &out, &byte_level);
  if (!byte_level) {
    r.Fail("pre_tokenizer", "no ByteLevel step: tern reads byte-level BPE tokenizers only");
  }
  if (out.pre_tokenizer.size() > bpe::kMaxPreTokenizerSteps) {
    r.Fail("pre_tokenizer", std::to_string(out.pre_tokenizer.size()) + " steps, at most " +
                                std::to_string(bpe::kMaxPreTokenizerSteps) + " are implemented");
  }
  Template t;
  if (root.contains("post_processor")) {
    ReadPostProcessor(r, root["post_processor"], "post_processor", &t);
  }
  out.prefix_ids = t.prefix;
  out.suffix_ids = t.suffix;
  ReadDecoder(r, root);
  Assemble(r, parsed, &out);
  // Normalized added tokens are looked for in normalized text, so their contents are
  // normalized too (as the Rust and JavaScript tokenizers do); decoding keeps token_bytes.
  if (out.nfc) {
    std::set<std::string> contents;
    for (AddedTokenData& a : out.added_tokens) {
      if (a.normalized) a.content = Nfc(a.content);
    }
    for (const AddedTokenData& a : out.added_tokens) {
      if (!contents.insert(a.content).second) {
        r.Fail("added_tokens", "two tokens are " + Quote(a.content) + " after NFC");
      }
    }
  }
  return out;
}

BpeTokenizerData ReadTokenizerJson(const std::string& path) {
  const auto file = FileBytes::Open(path);
  return ParseTokenizerJson(std::string(reinterpret_cast<const char*>(file->data()), file->size()),
                            path);
}

}  // namespace tern::convert
