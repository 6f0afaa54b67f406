// Hugging Face GPT-2 checkpoints (transformers' modeling_gpt2.py names; pytorch_model.bin or
// model.safetensors) and their config.json, onto tern's decoder-only layout:
//
//   transformer.wte.weight                [V, d]        -> decoder.embed_tokens.weight
//   transformer.wpe.weight                [n_pos, d]    -> decoder.embed_positions.weight
//   transformer.h.N.ln_1.{weight,bias}                  -> decoder.layers.N.self_attn_layer_norm
//   transformer.h.N.attn.c_attn.{weight,bias} [d, 3d]   -> self_attn.{q,k,v}_proj (split)
//   transformer.h.N.attn.c_proj.{weight,bias} [d, d]    -> self_attn.out_proj
//   transformer.h.N.ln_2.{weight,bias}                  -> decoder.layers.N.final_layer_norm
//   transformer.h.N.mlp.c_fc.{weight,bias}   [d, 4d]    -> fc1
//   transformer.h.N.mlp.c_proj.{weight,bias} [4d, d]   -> fc2
//   transformer.ln_f.{weight,bias}                      -> decoder.layer_norm
//   lm_head.weight                        [V, d]        tied to wte: verified and dropped
//   transformer.h.N.attn.bias / .masked_bias            the causal mask buffers: dropped
//
// GPT-2's Conv1D stores its weight [in, out], transposed against nn.Linear ([out, in], tern's
// layout), so every Conv1D weight is transposed here; c_attn holds Q, K and V side by side along
// its out dimension. The "transformer." prefix is absent in GPT2Model (no LM head) state dicts.
// The model: pre-LN blocks, gelu_new (the tanh approximation), a final LayerNorm, learned
// absolute positions, no embedding scale.
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/decoder_only_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

ref::Activation Gpt2Activation(const std::string& name, const std::string& label) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return ref::Activation::kGELUTanh;
  if (name == "gelu") return ref::Activation::kGELU;
  if (name == "relu") return ref::Activation::kReLU;
  if (name == "silu" || name == "swish") return ref::Activation::kSwish;
  throw Error(label + ": \"activation_function\" = \"" + name +
              "\" is not supported; expected gelu_new, gelu_pytorch_tanh, gelu, relu or silu");
}

// canonical <- columns [begin, begin + count) of a Conv1D weight [in, total], transposed to
// [count, in] (nn.Linear's layout).
void Conv1DWeight(Sources& src, MappedCheckpoint* out, const std::string& canonical,
                  const std::string& source, int64_t in, int64_t total, int64_t begin,
                  int64_t count) {
  const bool whole = begin == 0 && count == total;
  const std::string label = whole ? source + " (Conv1D, transposed)"
                                  : source + " columns [" + std::to_string(begin) + ", " +
                                        std::to_string(begin + count) + ") (Conv1D, transposed)";
  out->source_names[canonical] = label;
  if (!src.Has(source)) return;
  src.Use(source);
  const Checkpoint* ckpt = &src.ckpt();
  out->tensors[canonical] = MappedTensor{
      label, [ckpt, source, in, total, begin, count] {
        HostTensor w = ckpt->Float(source);
        if (w.shape != std::vector<int64_t>{in, total}) {
          throw Error(ckpt->at(source).where + ": tensor \"" + source + "\" has shape " +
                      w.shape_string() + ", expected [" + std::to_string(in) + ", " +
                      std::to_string(total) + "] from config.json (a Conv1D weight is [in, out])");
        }
        HostTensor t;
        t.name = source;
        t.shape = {count, in};
        t.values.resize(static_cast<size_t>(count * in));
        for (int64_t o = 0; o < count; ++o) {
          for (int64_t i = 0; i < in; ++i) t.values[o * in + i] = w.values[i * total + begin + o];
        }
        return t;
      }};
}

// canonical <- elements [begin, begin + count) of a bias [total].
void BiasSlice(Sources& src, MappedCheckpoint* out, const std::string& canonical,
               const std::string& source, int64_t total, int64_t begin, int64_t count) {
  if (begin == 0 && count == total) return src.Direct(out, canonical, source);
  const std::string label =
      source + " [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ")";
  out->source_names[canonical] = label;
  if (!src.Has(source)) return;
  src.Use(source);
  const Checkpoint* ckpt = &src.ckpt();
  out->tensors[canonical] =
      MappedTensor{label, [ckpt, source, total, begin, count] {
                     HostTensor b = ckpt->Float(source);
                     if (b.shape != std::vector<int64_t>{total}) {
                       throw Error(ckpt->at(source).where + ": tensor \"" + source +
                                   "\" has shape " + b.shape_string() + ", expected [" +
                                   std::to_string(total) + "] from config.json");
                     }
                     HostTensor t;
                     t.name = source;
                     t.shape = {count};
                     t.values.assign(b.values.begin() + begin, b.values.begin() + begin + count);
                     return t;
                   }};
}

}  // namespace

MappedCheckpoint MapGpt2(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, "gpt2", &out);
  const HfConfig hf(j, out.config_label, "GPT-2");
  const std::string model_type = hf.String("model_type", "gpt2");
  if (model_type != "gpt2") {
    throw Error(out.config_label + ": \"model_type\" is \"" + model_type + "\", not \"gpt2\"");
  }
  if (!hf.Bool("scale_attn_weights", true) || hf.Bool("scale_attn_by_inverse_layer_idx", false) ||
      hf.Bool("add_cross_attention", false)) {
    throw Error(
        out.config_label +
        ": scale_attn_weights false, scale_attn_by_inverse_layer_idx or add_cross_attention are "
        "not "
        "supported (the runtime scales attention by 1/sqrt(d_head) and has no cross-attention)");
  }
  ModelConfig& c = out.config;
  c.architecture = Architecture::kDecoderOnly;
  c.d_model = hf.Int("n_embd", true);
  c.heads = hf.Int("n_head", true);
  if (c.d_model % c.heads != 0) {
    throw Error(out.config_label + ": \"n_head\" = " + std::to_string(c.heads) +
                " does not divide \"n_embd\" = " + std::to_string(c.d_model));
  }
  c.encoder_layers = 0;
  c.decoder_layers = hf.Int("n_layer", true);
  c.d_ff = hf.Int("n_inner", false, 4 * c.d_model);  // null: 4 * n_embd, as GPT2MLP
  c.activation = Gpt2Activation(hf.String("activation_function", "gelu_new"), out.config_label);
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = hf.Number("layer_norm_epsilon", 1e-5f);
  c.position = PositionKind::kLearned;
  c.embedding_scale = 1.0f;
  c.shared_embeddings = false;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = hf.Int("vocab_size", true);
  c.max_positions = hf.Int("n_positions", true);
  // GPT-2's one special token, <|endoftext|> (50256 = the last id), is BOS and EOS; it has no
  // padding or unknown token (byte-level BPE), so those point at it too.
  c.eos_id = hf.Id("eos_token_id", c.tgt_vocab_size - 1);
  c.bos_id = hf.Id("bos_token_id", c.eos_id);
  c.pad_id = hf.Id("pad_token_id", c.eos_id);
  c.unk_id = c.eos_id;
  c.decoder_start_id = c.bos_id;
  const bool tie = hf.Bool("tie_word_embeddings", true);
  c.tied_output = tie;
  ApplyOverrides(options, &out);

  Sources src(ckpt, options.skip_prefixes);
  const std::string p =
      src.Has("transformer.wte.weight") || !src.Has("wte.weight") ? "transformer." : "";
  const int32_t layers = CountLayers(src, p + "h.");
  if (layers != c.decoder_layers) {
    throw Error(ckpt.label() + ": " + std::to_string(layers) + " layers (" + p +
                "h.N) in the checkpoint, but " + out.config_label +
                " says \"n_layer\": " + std::to_string(c.decoder_layers));
  }
  const int64_t d = c.d_model, ff = c.d_ff;
  src.Direct(&out, "decoder.embed_tokens.weight", p + "wte.weight");
  src.Direct(&out, "decoder.embed_positions.weight", p + "wpe.weight");
  src.Direct(&out, "decoder.layer_norm.weight", p + "ln_f.weight");
  src.Direct(&out, "decoder.layer_norm.bias", p + "ln_f.bias");
  for (int32_t i = 0; i < c.decoder_layers; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".";
    const std::string layer = "decoder.layers." + std::to_string(i) + ".";
    src.Direct(&out, layer + "self_attn_layer_norm.weight", h + "ln_1.weight");
    src.Direct(&out, layer + "self_attn_layer_norm.bias", h + "ln_1.bias");
    const char* qkv[] = {"q_proj", "k_proj", "v_proj"};
    for (int64_t part = 0; part < 3; ++part) {
      const std::string proj = layer + "self_attn." + qkv[part];
      Conv1DWeight(src, &out, proj + ".weight", h + "attn.c_attn.weight", d, 3 * d, part * d, d);
      BiasSlice(src, &out, proj + ".bias", h + "attn.c_attn.bias", 3 * d, part * d, d);
    }
    Conv1DWeight(src, &out, layer + "self_attn.out_proj.weight", h + "attn.c_proj.weight", d, d, 0,
                 d);
    BiasSlice(src, &out, layer + "self_attn.out_proj.bias", h + "attn.c_proj.bias", d, 0, d);
    src.Direct(&out, layer + "final_layer_norm.weight", h + "ln_2.weight");
    src.Direct(&out, layer + "final_layer_norm.bias", h + "ln_2.bias");
    Conv1DWeight(src, &out, layer + "fc1.weight", h + "mlp.c_fc.weight", d, ff, 0, ff);
    BiasSlice(src, &out, layer + "fc1.bias", h + "mlp.c_fc.bias", ff, 0, ff);
    Conv1DWeight(src, &out, layer + "fc2.weight", h + "mlp.c_proj.weight", ff, d, 0, d);
    BiasSlice(src, &out, layer + "fc2.bias", h + "mlp.c_proj.bias", d, 0, d);
    // GPT-2's layers always have biases; tern's layout treats biases as optional, so a missing
    // one would silently become zero.
    for (const char* leaf : {"ln_1.bias", "attn.c_attn.bias", "attn.c_proj.bias", "ln_2.bias",
                             "mlp.c_fc.bias", "mlp.c_proj.bias"}) {
      if (!src.Has(h + leaf)) {
        throw Error(ckpt.label() + ": required tensor \"" + h + leaf +
                    "\" is missing (GPT-2 layers have biases)");
      }
    }
    // The causal mask and its fill value are buffers in older transformers' state dicts.
    for (const char* buffer : {"attn.bias", "attn.masked_bias"}) {
      if (src.Has(h + buffer)) src.Use(h + buffer);
    }
  }
  if (tie) {
    if (src.Has("lm_head.weight")) {
      if (src.Has(p + "wte.weight") && !SameValues(ckpt, "lm_head.weight", p + "wte.weight")) {
        throw Error(ckpt.label() + ": tensor \"lm_head.weight\" differs from \"" + p +
                    "wte.weight\" although config tie_word_embeddings is true (transformers would "
                    "replace it)");
      }
      src.Use("lm_head.weight");
      out.notes.push_back("dropped lm_head.weight: tied to " + p + "wte.weight");
    }
  } else {
    src.Direct(&out, "output_projection.weight", "lm_head.weight");
  }
  src.CheckAllUsed("(not part of a GPT-2 model with this config.json)");
  return out;
}

}  // namespace tern::convert::arch
