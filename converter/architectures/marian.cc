// Hugging Face MarianMT (OPUS-MT) checkpoints: pytorch_model.bin / model.safetensors with
// names as transformers' modeling_marian.py defines them, and its config.json.
//
//   model.shared.weight                        [V, d]   (share_encoder_decoder_embeddings)
//   model.encoder.embed_tokens.weight          [V, d]   (a tied copy, or its own table)
//   model.decoder.embed_tokens.weight          [Vt, d]
//   model.{encoder,decoder}.embed_positions.weight  [max_pos, d]  sinusoidal, not trained
//   model.encoder.layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
//                           final_layer_norm}.{weight,bias}
//   model.decoder.layers.N.{self_attn, self_attn_layer_norm, encoder_attn,
//                           encoder_attn_layer_norm, fc1, fc2, final_layer_norm}.*
//   lm_head.weight                             [Vt, d]  (tied to the decoder embedding)
//   final_logits_bias                          [1, Vt]  -> output_projection.bias
//
// Post-LN (MarianEncoderLayer: residual, then LayerNorm, eps 1e-5), embeddings scaled by
// sqrt(d_model) when scale_embedding, decoding starts from decoder_start_token_id (= pad).
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/architectures/hf_seq2seq.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

struct MarianConfigJson {
  const nlohmann::json& j;
  std::string label;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  int32_t Int(const char* key, int32_t fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < 0 ||
        j[key].get<int64_t>() > INT32_MAX) {
      throw Error(label + ": \"" + key + "\" must be a non-negative integer");
    }
    return static_cast<int32_t>(j[key].get<int64_t>());
  }
  bool Bool(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean()) throw Error(label + ": \"" + key + "\" must be true or false");
    return j[key].get<bool>();
  }
  std::string String(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string()) throw Error(label + ": \"" + key + "\" must be a string");
    return j[key].get<std::string>();
  }
};

}  // namespace

MappedCheckpoint MapMarian(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, "marian", &out);
  const MarianConfigJson hf{j, out.config_label};
  const std::string model_type = hf.String("model_type", "marian");
  if (model_type != "marian") {
    throw Error(out.config_label + ": \"model_type\" is \"" + model_type + "\", not \"marian\"");
  }
  // MarianConfig's defaults (transformers/models/marian/configuration_marian.py) apply to
  // missing keys, as they would in transformers.
  ModelConfig& c = out.config;
  ReadHfSeq2SeqSizes(HfConfig(j, out.config_label, "MarianMT"), out.config_label, &c);
  c.activation = HfActivation(hf.String("activation_function", "gelu"), out.config_label);
  c.norm_placement =
      hf.Bool("normalize_before", false) ? NormPlacement::kPre : NormPlacement::kPost;
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which MarianEncoderLayer uses
  c.position = PositionKind::kSinusoidal;
  // transformers computes its table with the paper's frequencies in two halves; a stored table
  // decides below (Marian C++ exports use the concatenated layout).
  c.sinusoid_layout = ref::SinusoidLayout::kSplitHalves;
  c.embedding_scale = hf.Bool("scale_embedding", false)
                          ? static_cast<float>(std::sqrt(static_cast<double>(c.d_model)))
                          : 1.0f;
  const bool share = hf.Bool("share_encoder_decoder_embeddings", true);
  const bool tie = hf.Bool("tie_word_embeddings", true);
  c.src_vocab_size = hf.Int("vocab_size", 50265);
  c.tgt_vocab_size = share ? c.src_vocab_size : hf.Int("decoder_vocab_size", c.src_vocab_size);
  c.pad_id = hf.Int("pad_token_id", 58100);
  c.eos_id = hf.Int("eos_token_id", 0);
  c.bos_id = hf.Int("bos_token_id", 0);
  c.unk_id = c.src_vocab_size > 1 ? 1 : 0;  // Marian vocabularies: </s> 0, <unk> 1
  c.decoder_start_id = hf.Int("decoder_start_token_id", c.pad_id);
  c.max_positions = hf.Int("max_position_embeddings", 1024);
  if (hf.Bool("normalize_embedding", false)) {
    throw Error(
        out.config_label +
        ": \"normalize_embedding\": true (a LayerNorm on the embeddings) is not supported by "
        "the runtime");
  }
  if (!hf.Bool("static_position_embeddings", true)) {
    throw Error(out.config_label +
                ": \"static_position_embeddings\": false (learned positions) is not supported");
  }
  if (hf.Bool("add_final_layer_norm", false) && c.norm_placement == NormPlacement::kPost) {
    throw Error(out.config_label +
                ": \"add_final_layer_norm\" with post-LN layers is not supported by the runtime");
  }
  if (j.contains("scale_embedding")) {
    out.notes.push_back(std::string("embedding_scale = ") +
                        (hf.Bool("scale_embedding", false) ? "sqrt(d_model)" : "1") +
                        " (scale_embedding)");
  }

  Sources src(ckpt, options.skip_prefixes);
  // Token embeddings: model.shared and the encoder/decoder copies must agree when shared;
  // lm_head (tied unless tie_word_embeddings is false) + final_logits_bias.
  MapHfEmbeddings(ckpt, src, share, tie, true, "config share_encoder_decoder_embeddings is true",
                  &out);
  // Sinusoidal position tables: verified against the runtime's, then dropped.
  for (const char* name :
       {"model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"}) {
    if (!src.Has(name)) continue;
    // The stored table is the truth: transformers' split halves, or Marian's concatenated one.
    std::vector<std::string> probe;
    bool split = true;
    try {
      VerifyPositionTable(ckpt, name, c.d_model, ref::SinusoidLayout::kSplitHalves, false, &probe);
    } catch (const Error&) {
      split = false;
    }
    c.sinusoid_layout =
        split ? ref::SinusoidLayout::kSplitHalves : ref::SinusoidLayout::kConcatenated;
    VerifyPositionTable(ckpt, name, c.d_model, c.sinusoid_layout, options.ignore_position_mismatch,
                        &out.notes);
    src.Use(name);
  }
  if (!src.Has("model.encoder.embed_positions.weight")) {
    out.notes.push_back(
        "no stored position table: using transformers' own sinusoidal table (split halves, "
        "frequencies 1/10000^(2i/d))");
  }

  ApplyOverrides(options, &out);
  // The layers: HF names under "model." are the canonical names.
  for (const auto& e : EncoderDecoderLayout(c)) {
    if (e.name.compare(0, 8, "encoder.") != 0 && e.name.compare(0, 8, "decoder.") != 0) continue;
    if (e.name.find(".embed_tokens.") != std::string::npos) continue;
    src.Direct(&out, e.name, "model." + e.name);
  }
  src.CheckAllUsed("(not part of a MarianMT model with this config.json)");
  return out;
}

}  // namespace tern::convert::arch
