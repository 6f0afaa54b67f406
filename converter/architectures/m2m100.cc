// Hugging Face M2M100 and NLLB-200 checkpoints (model_type "m2m100" for both; NLLB differs in
// its tokenizer only): pytorch_model.bin / model.safetensors with names as transformers'
// modeling_m2m100.py registers them, and its config.json.
//
//   model.shared.weight                        [V, d]   (the encoder's and decoder's table)
//   model.{encoder,decoder}.embed_tokens.weight [V, d]  (tied copies)
//   model.{encoder,decoder}.embed_positions.weights    fairseq's sinusoidal table, a buffer
//                                                       newer checkpoints do not store
//   model.encoder.layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
//                           final_layer_norm}.{weight,bias}
//   model.decoder.layers.N.{self_attn, self_attn_layer_norm, encoder_attn,
//                           encoder_attn_layer_norm, fc1, fc2, final_layer_norm}.*
//   model.{encoder,decoder}.layer_norm.{weight,bias}   the final norms of the pre-LN stacks
//   lm_head.weight                             [V, d]   (tied to model.shared unless
//                                                        tie_word_embeddings is false)
//
// Pre-LN (x + f(LN(x)), LayerNorm eps 1e-5) with a final norm per stack, ReLU by default,
// embeddings scaled by sqrt(d_model) when scale_embedding, sinusoidal positions in fairseq's
// concatenated layout counted from padding_idx + 1 (sinusoid_layout = fairseq), decoding from
// decoder_start_token_id (</s>); the target language is a forced first token per call
// (DecodingOptions::forced_bos_id).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/architectures/hf_seq2seq.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

// The language codes of the tokenizer beside the checkpoint: tokenizer_config.json's
// additional_special_tokens (NLLB's "deu_Latn", M2M100's "__de__", stored as "de"), each with
// its id from added_tokens_decoder. No file: no language table (a note).
std::vector<std::pair<std::string, int32_t>> ReadLanguageCodes(const std::string& dir,
                                                               int32_t vocab,
                                                               std::vector<std::string>* notes) {
  const std::string path = dir + "/tokenizer_config.json";
  std::vector<std::pair<std::string, int32_t>> out;
  if (!FileExists(path)) {
    notes->push_back("no " + path +
                     ": no language table (source and target languages are given as ids)");
    return out;
  }
  const nlohmann::json j = ParseJsonText(ReadTextFile(path), path);
  if (!j.is_object() || !j.contains("additional_special_tokens")) {
    notes->push_back(path + " has no additional_special_tokens: no language table");
    return out;
  }
  std::map<std::string, int64_t> ids;
  if (j.contains("added_tokens_decoder") && j["added_tokens_decoder"].is_object()) {
    for (const auto& kv : j["added_tokens_decoder"].items()) {
      if (!kv.value().is_object() || !kv.value().contains("content") ||
          !kv.value()["content"].is_string()) {
        throw Error(path + ": added_tokens_decoder \"" + kv.key() + "\" has no \"content\"");
      }
      char* end = nullptr;
      const long long id = std::strtoll(kv.key().c_str(), &end, 10);
      if (end == kv.key().c_str() || *end != '\0' || id < 0) {
        throw Error(path + ": added_tokens_decoder key \"" + kv.key() + "\" is not a token id");
      }
      ids[kv.value()["content"].get<std::string>()] = id;
    }
  }
  const nlohmann::json& codes = j["additional_special_tokens"];
  if (!codes.is_array()) throw Error(path + ": \"additional_special_tokens\" must be a list");
  for (const auto& c : codes) {
    const nlohmann::json& content = c.is_object() && c.contains("content") ? c["content"] : c;
    if (!content.is_string()) {
      throw Error(path + ": \"additional_special_tokens\" holds a non-string entry");
    }
    const std::string token = content.get<std::string>();
    auto it = ids.find(token);
    if (it == ids.end()) {
      throw Error(path + ": language token \"" + token + "\" has no id in added_tokens_decoder");
    }
    if (it->second >= vocab) {
      throw Error(path + ": language token \"" + token + "\" has id " + std::to_string(it->second) +
                  ", outside the vocabulary (" + std::to_string(vocab) + ")");
    }
    // M2M100 writes its codes __de__; callers name the language de.
    std::string code = token;
    if (code.size() > 4 && code.compare(0, 2, "__") == 0 &&
        code.compare(code.size() - 2, 2, "__") == 0) {
      code = code.substr(2, code.size() - 4);
    }
    out.emplace_back(code, static_cast<int32_t>(it->second));
  }
  notes->push_back(std::to_string(out.size()) + " language codes from " + path);
  return out;
}

MappedCheckpoint MapM2M100Layout(const Checkpoint& ckpt, const ArchitectureOptions& options,
                                 const std::string& arch) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, arch, &out);
  const std::string& label = out.config_label;
  const HfConfig hf(j, label, "M2M100");
  const std::string model_type = hf.String("model_type", "m2m100");
  if (model_type == "nllb-moe" || model_type == "nllb_moe") {
    throw Error(label + ": \"model_type\" is \"" + model_type +
                "\": NLLB-MoE (mixture-of-experts layers) is not supported");
  }
  if (model_type != "m2m100") {
    throw Error(label + ": \"model_type\" is \"" + model_type + "\", not \"m2m100\"");
  }
  // M2M100Config's defaults (transformers/models/m2m_100/configuration_m2m_100.py) apply to
  // missing keys, as they would in transformers.
  ModelConfig& c = out.config;
  ReadHfSeq2SeqSizes(hf, label, &c);
  c.activation = HfActivation(hf.String("activation_function", "relu"), label);
  c.norm_placement = NormPlacement::kPre;  // M2M100EncoderLayer: x + f(LN(x)), always
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which M2M100's layers use
  c.position = PositionKind::kSinusoidal;
  c.sinusoid_layout = ref::SinusoidLayout::kFairseq;
  const bool scale = hf.Bool("scale_embedding", true);
  c.embedding_scale = scale ? static_cast<float>(std::sqrt(static_cast<double>(c.d_model))) : 1.0f;
  out.notes.push_back(std::string("embedding_scale = ") + (scale ? "sqrt(d_model)" : "1") +
                      " (scale_embedding)");
  c.src_vocab_size = c.tgt_vocab_size = hf.Int("vocab_size", false, 128112);
  c.bos_id = hf.Id("bos_token_id", 0);
  c.pad_id = hf.Id("pad_token_id", 1);
  c.eos_id = hf.Id("eos_token_id", 2);
  c.unk_id = c.src_vocab_size > 3 ? 3 : 0;  // fairseq dictionaries: <s> <pad> </s> <unk>
  c.decoder_start_id = hf.Id("decoder_start_token_id", 2);
  // transformers sizes its table max_position_embeddings + padding_idx + 1 rows: sequences of
  // max_position_embeddings tokens fit.
  c.max_positions = hf.Int("max_position_embeddings", false, 1024);
  for (const char* key : {"encoder_layerdrop", "decoder_layerdrop"}) {
    if (hf.has(key) && hf.Number(key, 0.0f) > 0.0f) {
      out.notes.push_back(std::string("ignored ") + key +
                          ": LayerDrop skips layers only in training; inference runs them all");
    }
  }
  for (const char* key : {"num_experts", "expert_capacity", "router_bias"}) {
    if (hf.has(key)) {
      throw Error(label + ": \"" + key +
                  "\" belongs to NLLB-MoE (mixture-of-experts layers), which is not supported");
    }
  }

  Sources src(ckpt, options.skip_prefixes);
  // M2M100Model always shares one table between the encoder and the decoder.
  MapHfEmbeddings(ckpt, src, true, hf.Bool("tie_word_embeddings", true), false,
                  "M2M100 shares one embedding table", &out);
  for (const char* name :
       {"model.encoder.embed_positions.weights", "model.decoder.embed_positions.weights"}) {
    if (!src.Has(name)) continue;
    VerifyPositionTable(ckpt, name, c.d_model, c.sinusoid_layout, options.ignore_position_mismatch,
                        &out.notes, c.pad_id);
    src.Use(name);
  }
  ApplyOverrides(options, &out);
  for (const auto& e : EncoderDecoderLayout(c)) {
    if (e.name.compare(0, 8, "encoder.") != 0 && e.name.compare(0, 8, "decoder.") != 0) continue;
    if (e.name.find(".embed_tokens.") != std::string::npos) continue;
    src.Direct(&out, e.name, "model." + e.name);
  }
  src.CheckAllUsed("(not part of an M2M100 / NLLB model with this config.json)");
  out.languages = ReadLanguageCodes(DirName(options.checkpoint),
                                    std::min(c.src_vocab_size, c.tgt_vocab_size), &out.notes);
  return out;
}

}  // namespace

MappedCheckpoint MapM2M100(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapM2M100Layout(ckpt, options, "m2m100");
}

MappedCheckpoint MapNllb(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapM2M100Layout(ckpt, options, "nllb");
}

}  // namespace tern::convert::arch
