#include "converter/tokenizer/prompt_specials.h"

#include <algorithm>

#include "converter/architectures/architecture_util.h"
#include "converter/error.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tern::convert {

namespace {

// transformers' classes whose add_bos_token / add_eos_token decide the prompt's specials
// (AutoTokenizer loads the fast one for either name).
bool ReadsSpecialFlags(const std::string& tokenizer_class) {
  for (const char* c : {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                        "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"}) {
    if (tokenizer_class == c) return true;
  }
  return false;
}

std::optional<bool> FlagOf(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_boolean()) throw Error(path + ": " + key + " is not true or false");
  return j[key].get<bool>();
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object
// ({"__type": "AddedToken", "content": ...}).
std::optional<std::string> TokenOf(const nlohmann::json& j, const char* key,
                                   const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  const nlohmann::json& t = j[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) {
    return t["content"].get<std::string>();
  }
  throw Error(path + ": " + key + " is neither a string nor an object with a \"content\" string");
}

std::string Flags(const PromptSpecials& s) {
  return std::string("add_bos_token ") + (s.add_bos ? "true" : "false") + ", add_eos_token " +
         (s.add_eos ? "true" : "false");
}

// The id of the token whose content is `content`: an added token, or a vocabulary token that
// decodes to exactly those bytes; -1 when none.
int32_t FindToken(const BpeTokenizerData& data, const std::string& content) {
  for (const AddedTokenData& a : data.added_tokens) {
    if (a.content == content) return a.id;
  }
  for (int32_t id = 0; id < data.vocab_size(); ++id) {
    if (data.token_bytes[id] == content) return id;
  }
  return -1;
}

std::string IdsString(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace

TokenizerConfig ReadTokenizerConfig(const std::string& dir) {
  TokenizerConfig out;
  const std::string path = dir + "/tokenizer_config.json";
  if (!arch::FileExists(path)) return out;
  const nlohmann::json j = arch::ParseJsonText(arch::ReadTextFile(path), path);
  if (!j.is_object()) throw Error(path + ": not a JSON object");
  out.path = path;
  if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string()) {
    out.tokenizer_class = j["tokenizer_class"].get<std::string>();
  }
  out.add_bos_token = FlagOf(j, "add_bos_token", path);
  out.add_eos_token = FlagOf(j, "add_eos_token", path);
  out.bos_token = TokenOf(j, "bos_token", path);
  out.eos_token = TokenOf(j, "eos_token", path);
  return out;
}

PromptSpecials SentencePiecePromptSpecials(const TokenizerConfig& config, const Tokenizer& spm,
                                           const std::string& model_path,
                                           std::vector<std::string>* notes) {
  PromptSpecials out;
  if (config.path.empty()) return out;
  out.add_bos = config.add_bos_token.value_or(true);
  out.add_eos = config.add_eos_token.value_or(false);
  struct Side {
    bool add;
    int32_t id;
    const std::optional<std::string>& token;
    const char* flag;
    const char* name;
  };
  for (const Side& side :
       {Side{out.add_bos, spm.bos_id(), config.bos_token, "add_bos_token", "bos_token"},
        Side{out.add_eos, spm.eos_id(), config.eos_token, "add_eos_token", "eos_token"}}) {
    if (!side.add) continue;
    if (side.id < 0) {
      throw Error(config.path + ": " + side.flag + " is true, but " + model_path +
                  " has no such piece");
    }
    std::string piece;
    if (side.token && spm.PieceBytes(side.id, true, &piece).ok() && piece != *side.token) {
      throw Error(config.path + ": " + side.name + " \"" + *side.token + "\" is not " + model_path +
                  "'s piece \"" + piece + "\" (id " + std::to_string(side.id) + ")");
    }
  }
  if (out.add_bos != true || out.add_eos != false) {
    notes->push_back(config.path + ": " + Flags(out) + ": a prompt gets " +
                     (out.add_bos ? "BOS" : "no BOS") + " before and " +
                     (out.add_eos ? "EOS" : "no EOS") + " after (format 1.10)");
  }
  return out;
}

void ApplyPromptSpecials(const TokenizerConfig& config, const std::string& tokenizer_path,
                         BpeTokenizerData* data, std::vector<std::string>* notes) {
  if (config.path.empty()) return;
  const char* hint = " (--no-tokenizer converts without a tokenizer)";
  if (ReadsSpecialFlags(config.tokenizer_class)) {
    PromptSpecials flags;
    flags.add_bos = config.add_bos_token.value_or(true);
    flags.add_eos = config.add_eos_token.value_or(false);
    std::vector<int32_t> prefix, suffix;
    struct Side {
      bool add;
      const std::optional<std::string>& token;
      const char* flag;
      const char* name;
      std::vector<int32_t>* ids;
    };
    for (const Side& side :
         {Side{flags.add_bos, config.bos_token, "add_bos_token", "bos_token", &prefix},
          Side{flags.add_eos, config.eos_token, "add_eos_token", "eos_token", &suffix}}) {
      if (!side.add) continue;
      if (!side.token) {
        throw Error(config.path + ": " + side.flag + " is true but " + side.name + " is not set" +
                    hint);
      }
      const int32_t id = FindToken(*data, *side.token);
      if (id < 0) {
        throw Error(config.path + ": " + side.name + " \"" + *side.token + "\" is no token of " +
                    tokenizer_path + hint);
      }
      side.ids->push_back(id);
    }
    if (prefix != data->prefix_ids || suffix != data->suffix_ids) {
      notes->push_back(config.path + ": tokenizer_class " + config.tokenizer_class + " with " +
                       Flags(flags) + " replaces the post-processor's " +
                       IdsString(data->prefix_ids) + " before and " + IdsString(data->suffix_ids) +
                       " after a text with " + IdsString(prefix) + " and " + IdsString(suffix));
    }
    data->prefix_ids = prefix;
    data->suffix_ids = suffix;
    return;
  }
  // Another class: the post-processor decides; flags that say otherwise are refused.
  struct Check {
    const std::optional<bool>& flag;
    const std::optional<std::string>& token;
    const char* flag_name;
    const char* token_name;
    const std::vector<int32_t>& ids;
    const char* where;
  };
  for (const Check& c : {Check{config.add_bos_token, config.bos_token, "add_bos_token", "bos_token",
                               data->prefix_ids, "before"},
                         Check{config.add_eos_token, config.eos_token, "add_eos_token", "eos_token",
                               data->suffix_ids, "after"}}) {
    if (!c.flag) continue;
    const int32_t id = c.token ? FindToken(*data, *c.token) : -1;
    const bool present = id >= 0 && std::find(c.ids.begin(), c.ids.end(), id) != c.ids.end();
    if (present == *c.flag) continue;
    throw Error(config.path + ": " + c.flag_name + " is " + (*c.flag ? "true" : "false") +
                ", but " + tokenizer_path + "'s post-processor puts " + IdsString(c.ids) + " " +
                c.where + " a text" +
                (c.token ? " (" + std::string(c.token_name) + " \"" + *c.token + "\"" +
                               (id >= 0 ? " is id " + std::to_string(id) : " is no token") + ")"
                         : std::string(" (no ") + c.token_name + ")") +
                ", and tokenizer_class \"" + config.tokenizer_class +
                "\" is not one whose flags transformers applies for certain (Llama, CodeLlama, "
                "Gemma); make the two files agree" +
                hint);
  }
}

}  // namespace tern::convert
