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

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/architectures/hf_seq2seq.h"
#include "converter/architectures/language_codes.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

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
