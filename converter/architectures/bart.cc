// Hugging Face BART and mBART / mBART-50 checkpoints (BartForConditionalGeneration,
// MBartForConditionalGeneration: pytorch_model.bin or model.safetensors) and their config.json:
//
//   model.shared.weight                         [V, d]   one table for both stacks
//   model.{encoder,decoder}.embed_tokens.weight [V, d]   tied copies (verified and dropped)
//   model.{encoder,decoder}.embed_positions.weight  [max_pos + 2, d]  learned, offset 2: position
//                                                p uses row p + 2 -> rows 2.. become tern's table
//   model.{encoder,decoder}.layernorm_embedding.*  -> {encoder,decoder}.layernorm_embedding.*
//   model.encoder.layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
//                           final_layer_norm}.{weight,bias}
//   model.decoder.layers.N.{self_attn, self_attn_layer_norm, encoder_attn,
//                           encoder_attn_layer_norm, fc1, fc2, final_layer_norm}.*
//   model.{encoder,decoder}.layer_norm.*         mBART only: the final norm of each stack
//   lm_head.weight                               tied to model.shared (verified and dropped)
//   final_logits_bias                            [1, V]   -> output_projection.bias
//
// mBART's text path (converter/architectures/language_codes.h): sentencepiece.bpe.model with
// fairseq's offset rule, the language codes from tokenizer_config.json or fairseq's mBART-50
// list; mBART cc25's tokenizer (source X </s> [src_lang_code]) is refused.
//
// BART: post-LN layers, embeddings not scaled; mBART: pre-LN layers with final norms, embeddings
// scaled by sqrt(d_model) (both as config.json's scale_embedding says). Both: LayerNorm eps
// 1e-5, exact GELU, decoding from decoder_start_token_id (</s> = 2).
//
// transformers' current BART and mBART classes ignore the flags of its older unified BART
// configuration (normalize_before, add_final_layer_norm, normalize_embedding,
// static_position_embeddings, add_bias_logits, extra_pos_embeddings): a config that sets one of
// them to what the architecture does not do is refused by name rather than guessed.
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/architectures/hf_seq2seq.h"
#include "converter/architectures/language_codes.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

struct Variant {
  const char* arch;   // --arch and config.json's model_type
  const char* model;  // in messages
  bool pre_ln;        // mBART
  const char* hint;   // the unexpected-tensor hint
};

const Variant kBart{"bart", "BART", false, "(not part of a BART model with this config.json)"};
const Variant kMbart{"mbart", "mBART", true, "(not part of an mBART model with this config.json)"};

// A flag of the old unified configuration: refused when present with another value than the
// architecture has (`fact` says what it has).
void RequireFlag(const HfConfig& hf, const std::string& label, const char* key, bool expected,
                 const Variant& v, const std::string& fact) {
  if (!hf.has(key) || hf.Bool(key, expected) == expected) return;
  throw Error(label + ": \"" + key + "\": " + (expected ? "false" : "true") +
              " contradicts --arch " + v.arch + ": " + fact);
}

MappedCheckpoint MapBartFamily(const Checkpoint& ckpt, const ArchitectureOptions& options,
                               const Variant& v) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, v.arch, &out);
  const std::string& label = out.config_label;
  const HfConfig hf(j, label, v.model);
  const std::string model_type = hf.String("model_type", v.arch);
  if (model_type != v.arch) {
    throw Error(
        label + ": \"model_type\" is \"" + model_type + "\", not \"" + v.arch + "\"" +
        (model_type == "bart" || model_type == "mbart" ? " (use --arch " + model_type + ")" : ""));
  }
  RequireFlag(hf, label, "normalize_before", v.pre_ln, v,
              v.pre_ln ? "mBART layers are pre-LN (BART's post-LN layers: --arch bart)"
                       : "BART layers are post-LN (mBART's pre-LN layers: --arch mbart)");
  RequireFlag(hf, label, "add_final_layer_norm", v.pre_ln, v,
              v.pre_ln ? "every mBART stack ends with a LayerNorm"
                       : "BART stacks end without a final LayerNorm");
  RequireFlag(hf, label, "normalize_embedding", true, v,
              "every BART and mBART stack has a layernorm_embedding");
  RequireFlag(hf, label, "static_position_embeddings", false, v,
              "BART and mBART positions are learned (offset 2), not sinusoidal");
  if (hf.Bool("add_bias_logits", false)) {
    throw Error(label +
                ": \"add_bias_logits\": true (a second logits bias) is not supported; tern adds "
                "final_logits_bias only");
  }
  if (hf.has("extra_pos_embeddings") && hf.Int("extra_pos_embeddings", false) != kPositionOffset) {
    throw Error(label + ": \"extra_pos_embeddings\" = " +
                std::to_string(hf.Int("extra_pos_embeddings", false)) +
                " is not supported; BART's learned positions have an offset of 2");
  }
  ModelConfig& c = out.config;
  ReadHfSeq2SeqSizes(hf, label, &c);
  c.activation = HfActivation(hf.String("activation_function", "gelu"), label);
  c.norm_placement = v.pre_ln ? NormPlacement::kPre : NormPlacement::kPost;
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default, which BART's layers use
  c.position = PositionKind::kLearned;
  c.layernorm_embedding = true;
  c.embedding_scale = hf.Bool("scale_embedding", false)
                          ? static_cast<float>(std::sqrt(static_cast<double>(c.d_model)))
                          : 1.0f;
  c.src_vocab_size = c.tgt_vocab_size = hf.Int("vocab_size", false, 50265);
  c.pad_id = hf.Id("pad_token_id", 1);
  c.bos_id = hf.Id("bos_token_id", 0);
  c.eos_id = hf.Id("eos_token_id", 2);
  c.unk_id = c.src_vocab_size > 3 ? 3 : 0;  // <s> <pad> </s> <unk> (fairseq's dictionary)
  c.decoder_start_id = hf.Id("decoder_start_token_id", 2);
  c.max_positions = hf.Int("max_position_embeddings", false, 1024);
  // bart-large forces <s> after the </s> it starts from; mBART-50 the target language (per call:
  // tern translate --forced-bos).
  c.forced_bos_id = hf.has("forced_bos_token_id") ? hf.Id("forced_bos_token_id", 0) : -1;
  out.notes.push_back(std::string("embedding_scale = ") +
                      (c.embedding_scale != 1.0f ? "sqrt(d_model)" : "1") + " (scale_embedding)");
  if (hf.has("forced_eos_token_id")) {
    out.notes.push_back(
        "forced_eos_token_id: tern does not force EOS at the length limit (a translation cut at "
        "max length ends without it)");
  }

  Sources src(ckpt, options.skip_prefixes);
  MapHfEmbeddings(ckpt, src, true, hf.Bool("tie_word_embeddings", true), true,
                  "BART shares one embedding table", &out);
  ApplyOverrides(options, &out);
  for (const char* stack : {"encoder", "decoder"}) {
    OffsetPositions(src, &out, std::string(stack) + ".embed_positions.weight",
                    std::string("model.") + stack + ".embed_positions.weight",
                    c.max_positions + kPositionOffset, c.max_positions, c.d_model,
                    "max_position_embeddings + 2 rows: learned positions with offset 2");
  }
  out.notes.push_back(
      "learned positions: rows 2.. of model.{encoder,decoder}.embed_positions.weight (offset 2; "
      "rows 0 and 1 are never used)");
  // Layers, embedding norms and (mBART) final norms: the HF names under "model." are canonical.
  for (const auto& e : EncoderDecoderLayout(c)) {
    if (e.name.compare(0, 8, "encoder.") != 0 && e.name.compare(0, 8, "decoder.") != 0) continue;
    if (e.name.find(".embed_tokens.") != std::string::npos ||
        e.name.find(".embed_positions.") != std::string::npos)
      continue;
    src.Direct(&out, e.name, "model." + e.name);
    // Every BART linear layer and norm has a bias; the runtime's are optional, so a missing one
    // would silently be zero.
    const bool bias = e.name.size() > 5 && e.name.compare(e.name.size() - 5, 5, ".bias") == 0;
    if (bias && !src.Has("model." + e.name)) {
      throw Error(ckpt.label() + ": required tensor \"model." + e.name + "\" is missing (" +
                  v.model + " layers have biases)");
    }
  }
  src.CheckAllUsed(v.hint);
  if (v.pre_ln) {
    // mBART-50's codes (or cc25's refusal) from the tokenizer files beside the checkpoint.
    MbartLanguages languages =
        ReadMbartLanguages(DirName(options.checkpoint), c.src_vocab_size, &out.notes);
    out.languages = std::move(languages.codes);
    out.text_refusal = std::move(languages.refusal);
  }
  return out;
}

}  // namespace

MappedCheckpoint MapBart(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapBartFamily(ckpt, options, kBart);
}

MappedCheckpoint MapMbart(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapBartFamily(ckpt, options, kMbart);
}

}  // namespace tern::convert::arch
