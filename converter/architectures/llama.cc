// Hugging Face LLaMA checkpoints (transformers' modeling_llama.py names: LlamaForCausalLM,
// model.safetensors / pytorch_model.bin, sharded or not) and their config.json, onto tern's
// decoder-only layout with rotary positions, RMSNorm and SwiGLU:
//
//   model.embed_tokens.weight                   [V, d]    -> decoder.embed_tokens.weight
//   model.layers.N.input_layernorm.weight       [d]       ->
//   decoder.layers.N.self_attn_layer_norm.weight model.layers.N.self_attn.{q,k,v}_proj.weight [d,
//   d]   -> self_attn.{q,k,v}_proj.weight model.layers.N.self_attn.o_proj.weight      [d, d]    ->
//   self_attn.out_proj.weight model.layers.N.post_attention_layernorm.weight        ->
//   decoder.layers.N.final_layer_norm.weight model.layers.N.mlp.gate_proj.weight         [ff, d] ->
//   fc1 (SwiGLU's gate W1) model.layers.N.mlp.up_proj.weight           [ff, d]   -> fc3 (the up
//   projection W3) model.layers.N.mlp.down_proj.weight         [d, ff]   -> fc2 (W2)
//   model.norm.weight                           [d]       -> decoder.layer_norm.weight
//   lm_head.weight                              [V, d]    -> output_projection.weight (untied), or
//                                                            verified equal to embed_tokens and
//                                                            dropped
//   model.layers.N.self_attn.rotary_emb.inv_freq, model.rotary_emb.inv_freq
//                                                         RoPE frequencies (a buffer older
//                                                         transformers saved): verified against
//                                                         rope_theta, dropped
//
// Weights are nn.Linear ([out, in], tern's layout) without biases: nothing is transposed. The
// q/k rows need no reordering either: transformers' convert_llama_weights_to_hf.py permutes
// Meta's interleaved-pair rows into the "rotate_half" layout (dimension i rotates with
// i + d_head/2), which is how tern's rotary kernel pairs dimensions (docs/CONVENTIONS.md;
// tools/fixtures/make_llama_fixture.py checks the equivalence numerically). The "model." prefix
// is absent in LlamaModel (no LM head) state dicts.
#include <cmath>
#include <cstdio>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/decoder_only_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

// Refuses a LlamaConfig field whose value the runtime cannot compute, naming it.
void RefuseUnsupported(const HfConfig& hf, const std::string& label, int32_t heads) {
  const std::string model_type = hf.String("model_type", "llama");
  if (model_type != "llama") {
    throw Error(label + ": \"model_type\" is \"" + model_type + "\", not \"llama\"");
  }
  const int32_t kv_heads = hf.Int("num_key_value_heads", false, heads);
  if (kv_heads < 1 || heads % kv_heads != 0) {
    throw Error(label + ": \"num_key_value_heads\" = " + std::to_string(kv_heads) +
                " does not divide \"num_attention_heads\" = " + std::to_string(heads) +
                " (grouped-query attention shares each K/V head among heads / kv_heads query "
                "heads)");
  }
  if (hf.has("rope_scaling")) {
    throw Error(label + ": \"rope_scaling\" is " + hf.at("rope_scaling").dump() +
                ": scaled rotary positions are not supported (only plain RoPE with rope_theta)");
  }
  if (hf.Bool("attention_bias", false)) {
    throw Error(
        label +
        ": \"attention_bias\" is true: LLaMA attention projections with biases are not supported");
  }
  if (hf.Bool("mlp_bias", false)) {
    throw Error(label +
                ": \"mlp_bias\" is true: LLaMA MLP projections with biases are not supported");
  }
  const std::string act = hf.String("hidden_act", "silu");
  if (act != "silu") {
    throw Error(label + ": \"hidden_act\" = \"" + act +
                "\" is not supported; LLaMA's MLP is SwiGLU, down(silu(gate(x)) * up(x)), so it "
                "must be \"silu\"");
  }
}

// A rotary frequency buffer must be theta^(-2i/d_head) for i < d_head/2 (transformers computes
// it in float32 and may store it as f16/bf16): otherwise the checkpoint was trained with other
// positions than the config says, and the runtime's own table would silently differ.
void VerifyInvFreq(const Checkpoint& ckpt, const std::string& name, int64_t d_head, float theta,
                   std::vector<std::string>* notes) {
  const HostTensor t = ckpt.Float(name);
  const std::string where = ckpt.at(name).where + ": rotary buffer \"" + name + "\"";
  const int64_t half = d_head / 2;
  if (t.shape != std::vector<int64_t>{half}) {
    throw Error(where + " has shape " + t.shape_string() + ", expected [" + std::to_string(half) +
                "] (head size / 2: partial rotary is not part of LLaMA)");
  }
  const SourceDType stored = ckpt.at(name).dtype;
  const double tol = stored == SourceDType::kF16    ? 1e-3
                     : stored == SourceDType::kBF16 ? 8e-3
                                                    : 1e-5;
  for (int64_t i = 0; i < half; ++i) {
    const double want = std::pow(static_cast<double>(theta),
                                 -2.0 * static_cast<double>(i) / static_cast<double>(d_head));
    const double got = t.values[static_cast<size_t>(i)];
    if (!(std::fabs(got - want) <= tol * want)) {
      char detail[160];
      std::snprintf(detail, sizeof detail, "index %lld: %.7g stored, %.7g from rope_theta = %g",
                    static_cast<long long>(i), got, want, static_cast<double>(theta));
      throw Error(where + " is not the frequency table of config.json's rope_theta (" + detail +
                  "); fix rope_theta, or --skip-prefix the buffer to use the config's value");
    }
  }
  notes->push_back("verified and dropped " + name + ": the rotary frequencies of rope_theta");
}

}  // namespace

MappedCheckpoint MapLlama(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  out.config_label =
      options.config.empty() ? DirName(options.checkpoint) + "/config.json" : options.config;
  if (!FileExists(out.config_label)) {
    throw Error(ckpt.label() +
                ": --arch llama needs the model's Hugging Face config.json (beside the checkpoint, "
                "or --config PATH)");
  }
  const nlohmann::json j = ParseJsonText(ReadTextFile(out.config_label), out.config_label);
  if (!j.is_object()) throw Error(out.config_label + ": not a JSON object");
  const HfConfig hf(j, out.config_label, "LLaMA");
  ModelConfig& c = out.config;
  c.architecture = Architecture::kDecoderOnly;
  c.d_model = hf.Int("hidden_size", true);
  c.heads = hf.Int("num_attention_heads", true);
  RefuseUnsupported(hf, out.config_label, c.heads);
  c.kv_heads = hf.Int("num_key_value_heads", false, c.heads);  // grouped-query when < heads
  if (c.d_model % c.heads != 0) {
    throw Error(out.config_label + ": \"num_attention_heads\" = " + std::to_string(c.heads) +
                " does not divide \"hidden_size\" = " + std::to_string(c.d_model));
  }
  if (c.d_head() % 2 != 0) {
    throw Error(out.config_label + ": the head size hidden_size / num_attention_heads = " +
                std::to_string(c.d_head()) +
                " is odd; rotary positions pair dimension i with i + head_size / 2");
  }
  if (hf.has("head_dim") && hf.Int("head_dim", false) != c.d_head()) {
    throw Error(out.config_label + ": \"head_dim\" = " + std::to_string(hf.Int("head_dim", false)) +
                " differs from hidden_size / num_attention_heads = " + std::to_string(c.d_head()) +
                " (heads are slices of hidden_size in tern)");
  }
  for (const char* key : {"eos_token_id", "bos_token_id"}) {
    if (hf.has(key) && hf.at(key).is_array()) {
      throw Error(
          out.config_label + ": \"" + std::string(key) + "\" is a list " + hf.at(key).dump() +
          "; tern's model file holds one id: write one in config.json (or --config a copy)");
    }
  }
  c.encoder_layers = 0;
  c.decoder_layers = hf.Int("num_hidden_layers", true);
  c.d_ff = hf.Int("intermediate_size", true);
  c.activation = ref::Activation::kSwiGLU;
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kRMSNorm;
  c.layer_norm_eps = hf.Number("rms_norm_eps", 1e-6f);  // LlamaConfig's default
  c.position = PositionKind::kRotary;
  c.rotary_dim = 0;  // all of d_head
  c.rotary_base = hf.Number("rope_theta", 10000.0f);
  if (!(c.rotary_base > 0.0f)) throw Error(out.config_label + ": \"rope_theta\" must be > 0");
  c.embedding_scale = 1.0f;
  c.shared_embeddings = false;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = hf.Int("vocab_size", true);
  c.max_positions = hf.Int("max_position_embeddings", false, 2048);  // LlamaConfig's default
  // LLaMA's SentencePiece vocabulary: <unk> 0, <s> 1, </s> 2 (LlamaConfig's defaults). It has
  // no padding token; pad points at EOS as for GPT-2 (generation never pads).
  c.bos_id = hf.Id("bos_token_id", 1);
  c.eos_id = hf.Id("eos_token_id", 2);
  c.pad_id = hf.Id("pad_token_id", c.eos_id);
  c.unk_id = 0;
  c.decoder_start_id = c.bos_id;
  const bool tie = hf.Bool("tie_word_embeddings", false);
  c.tied_output = tie;
  ApplyOverrides(options, &out);

  Sources src(ckpt, options.skip_prefixes);
  const std::string p =
      src.Has("model.embed_tokens.weight") || !src.Has("embed_tokens.weight") ? "model." : "";
  const int32_t layers = CountLayers(src, p + "layers.");
  if (layers != c.decoder_layers) {
    throw Error(ckpt.label() + ": " + std::to_string(layers) + " layers (" + p +
                "layers.N) in the checkpoint, but " + out.config_label +
                " says \"num_hidden_layers\": " + std::to_string(c.decoder_layers));
  }
  src.Direct(&out, "decoder.embed_tokens.weight", p + "embed_tokens.weight");
  src.Direct(&out, "decoder.layer_norm.weight", p + "norm.weight");
  auto inv_freq = [&](const std::string& name) {
    if (!src.Has(name)) return;
    src.Use(name);
    VerifyInvFreq(ckpt, name, c.d_head(), c.rotary_base, &out.notes);
  };
  inv_freq(p + "rotary_emb.inv_freq");
  for (int32_t i = 0; i < c.decoder_layers; ++i) {
    const std::string h = p + "layers." + std::to_string(i) + ".";
    const std::string layer = "decoder.layers." + std::to_string(i) + ".";
    src.Direct(&out, layer + "self_attn_layer_norm.weight", h + "input_layernorm.weight");
    src.Direct(&out, layer + "self_attn.q_proj.weight", h + "self_attn.q_proj.weight");
    src.Direct(&out, layer + "self_attn.k_proj.weight", h + "self_attn.k_proj.weight");
    src.Direct(&out, layer + "self_attn.v_proj.weight", h + "self_attn.v_proj.weight");
    src.Direct(&out, layer + "self_attn.out_proj.weight", h + "self_attn.o_proj.weight");
    src.Direct(&out, layer + "final_layer_norm.weight", h + "post_attention_layernorm.weight");
    src.Direct(&out, layer + "fc1.weight", h + "mlp.gate_proj.weight");
    src.Direct(&out, layer + "fc3.weight", h + "mlp.up_proj.weight");
    src.Direct(&out, layer + "fc2.weight", h + "mlp.down_proj.weight");
    inv_freq(h + "self_attn.rotary_emb.inv_freq");
  }
  if (tie) {
    if (src.Has("lm_head.weight")) {
      if (src.Has(p + "embed_tokens.weight") &&
          !SameValues(ckpt, "lm_head.weight", p + "embed_tokens.weight")) {
        throw Error(ckpt.label() + ": tensor \"lm_head.weight\" differs from \"" + p +
                    "embed_tokens.weight\" although config tie_word_embeddings is true "
                    "(transformers would replace it)");
      }
      src.Use("lm_head.weight");
      out.notes.push_back("dropped lm_head.weight: tied to " + p + "embed_tokens.weight");
    }
  } else {
    src.Direct(&out, "output_projection.weight", "lm_head.weight");
  }
  src.CheckAllUsed(
      "(not part of a LLaMA model with this config.json; biases would need attention_bias / "
      "mlp_bias)");
  return out;
}

}  // namespace tern::convert::arch
