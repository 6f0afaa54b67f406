// Hugging Face T5-family checkpoints (T5ForConditionalGeneration: T5 v1.0, T5 v1.1, Flan-T5;
// MT5ForConditionalGeneration: mT5) and their config.json, onto tern's pre-LN encoder-decoder
// with RMSNorm and T5's relative attention bias. "E." = "encoder.block.N.", "D." =
// "decoder.block.N.", "e." / "d." = "encoder.layers.N." / "decoder.layers.N.":
//
//   shared.weight                         [V, d]    encoder.embed_tokens.weight (shared by both
//                                                   stacks; {encoder,decoder}.embed_tokens.weight
//                                                   copies are verified equal and dropped)
//   E.layer.0.SelfAttention.{q,k,v,o}     [H*d_kv, d] e.self_attn.{q,k,v,out}_proj (q x sqrt(d_kv))
//   E.layer.0.layer_norm                  [d]       e.self_attn_layer_norm
//   E.layer.1.DenseReluDense.wi / wi_0    [ff, d]   e.fc1 (relu's W1; gated-gelu's GELU gate)
//   E.layer.1.DenseReluDense.wi_1         [ff, d]   e.fc3 (gated-gelu's linear half)
//   E.layer.1.DenseReluDense.wo           [d, ff]   e.fc2
//   E.layer.1.layer_norm                  [d]       e.final_layer_norm
//   D.layer.0 (self), D.layer.1.EncDecAttention (cross, q x sqrt(d_kv)), D.layer.2 (FFN)
//   {encoder,decoder}.block.0.layer.0.SelfAttention.relative_attention_bias   [buckets, H]
//                                                   {encoder,decoder}.relative_attention_bias
//   {encoder,decoder}.final_layer_norm    [d]       {encoder,decoder}.layer_norm (the decoder's
//                                                   x d_model^-0.5 when tied)
//   lm_head.weight                        [V, d]    output_projection.weight (untied: v1.1, mT5,
//                                                   Flan-T5), or verified equal to shared (v1.0)
//   decoder.block.0.layer.1.EncDecAttention.relative_attention_bias
//                                                   in the original T5 checkpoints, ignored by
//                                                   transformers (cross-attention has no
//                                                   position bias): dropped with a note
//
// Two things T5 computes that tern's blocks express by folding constants into weights, exactly
// (docs/converter.md): T5 does not divide its attention logits by sqrt(d_kv) while tern does, so
// every q projection is multiplied by sqrt(d_kv) (8 for d_kv 64: a power of two, no rounding);
// tied T5 (v1.0) multiplies the decoder output by d_model^-0.5 before the tied projection, and
// the decoder's final norm only feeds that projection, so its gain takes the factor.
//
// config.json: d_model, d_kv (head_dim when heads * d_kv != d_model), d_ff, num_heads,
// num_layers, num_decoder_layers, relative_attention_num_buckets / _max_distance,
// layer_norm_epsilon, feed_forward_proj ("relu" or "gated-gelu"; dense_act_fn and is_gated_act,
// which newer transformers also writes, must agree with it), tie_word_embeddings, vocab_size,
// pad / eos / decoder_start ids. Missing keys take T5Config's defaults.
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/hf_config.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

struct Family {
  const char* arch;        // --arch
  const char* model_type;  // config.json's
  const char* name;        // in messages
};

const Family kT5{"t5", "t5", "T5"};
const Family kMt5{"mt5", "mt5", "mT5"};

// feed_forward_proj as transformers reads it: "[gated-]ACT"; "gated-gelu" means the tanh GELU
// (gelu_new). Returns the activation tern computes, or refuses by name.
ref::Activation ParseFeedForward(const HfConfig& hf, const std::string& label) {
  const std::string proj = hf.String("feed_forward_proj", "relu");
  const size_t dash = proj.find('-');
  const bool gated = dash != std::string::npos && proj.compare(0, dash, "gated") == 0;
  std::string act = gated ? proj.substr(dash + 1) : proj;
  if ((dash != std::string::npos && !gated) || act.find('-') != std::string::npos) {
    throw Error(label + ": \"feed_forward_proj\" = \"" + proj +
                "\" is not of the form \"ACT\" or \"gated-ACT\"");
  }
  if (gated && act == "gelu") act = "gelu_new";  // transformers' special case
  ref::Activation out;
  if (!gated && act == "relu") {
    out = ref::Activation::kReLU;
  } else if (gated && act == "gelu_new") {
    out = ref::Activation::kGeGLU;
  } else {
    throw Error(label + ": \"feed_forward_proj\" = \"" + proj +
                "\" is not supported; tern computes \"relu\" (T5 v1.0) and \"gated-gelu\" "
                "(T5 v1.1, mT5, Flan-T5: wo(gelu_tanh(wi_0 x) * wi_1 x))");
  }
  if (hf.has("is_gated_act") && hf.Bool("is_gated_act", gated) != gated) {
    throw Error(label + ": \"is_gated_act\" = " + hf.at("is_gated_act").dump() +
                " contradicts \"feed_forward_proj\" = \"" + proj + "\"");
  }
  if (hf.has("dense_act_fn") && hf.String("dense_act_fn", act) != act) {
    throw Error(label + ": \"dense_act_fn\" = \"" + hf.String("dense_act_fn", act) +
                "\" contradicts \"feed_forward_proj\" = \"" + proj + "\" (which means \"" + act +
                "\")");
  }
  return out;
}

// A loader that multiplies a mapped tensor's values by `factor` (folded constants, above).
void Scale(MappedCheckpoint* out, const std::string& canonical, double factor) {
  auto it = out->tensors.find(canonical);
  if (it == out->tensors.end()) return;
  it->second.load = [load = it->second.load, factor] {
    HostTensor h = load();
    for (float& v : h.values) v = static_cast<float>(static_cast<double>(v) * factor);
    return h;
  };
}

MappedCheckpoint MapT5Family(const Checkpoint& ckpt, const ArchitectureOptions& options,
                             const Family& family) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, family.arch, &out);
  const std::string& label = out.config_label;
  const HfConfig hf(j, label, family.name);
  const std::string model_type = hf.String("model_type", family.model_type);
  if (model_type != family.model_type) {
    std::string hint;
    for (const Family* f : {&kT5, &kMt5}) {
      if (model_type == f->model_type)
        hint = " (convert it with --arch " + std::string(f->arch) + ")";
    }
    throw Error(label + ": \"model_type\" is \"" + model_type + "\", not \"" + family.model_type +
                "\"" + hint);
  }
  if (!hf.Bool("is_encoder_decoder", true)) {
    throw Error(label + ": \"is_encoder_decoder\" is false: only the encoder-decoder " +
                family.name + " (" + (family.model_type == kT5.model_type ? "T5" : "MT5") +
                "ForConditionalGeneration) is supported");
  }
  ModelConfig& c = out.config;
  c.architecture = Architecture::kEncoderDecoder;
  c.d_model = hf.Int("d_model", false, 512);
  c.heads = hf.Int("num_heads", false, 8);
  const int32_t d_kv = hf.Int("d_kv", false, 64);
  // heads * d_kv may differ from d_model (T5 v1.1 small: 6 x 64 with d_model 512).
  c.head_dim = static_cast<int64_t>(d_kv) * c.heads == c.d_model ? 0 : d_kv;
  c.d_ff = hf.Int("d_ff", false, 2048);
  c.encoder_layers = hf.Int("num_layers", false, 6);
  c.decoder_layers = hf.Int("num_decoder_layers", false, c.encoder_layers);
  c.activation = ParseFeedForward(hf, label);
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kRMSNorm;
  c.layer_norm_eps = hf.Number("layer_norm_epsilon", 1e-6f);
  c.position = PositionKind::kRelative;
  c.relative_attention = RelativeAttention::kT5Bias;
  c.relative_buckets = hf.Int("relative_attention_num_buckets", false, 32);
  c.relative_max_distance = hf.Int("relative_attention_max_distance", false, 128);
  c.embedding_scale = 1.0f;
  c.shared_embeddings = true;
  const bool tie = hf.Bool("tie_word_embeddings", true);
  c.tied_output = tie;
  c.src_vocab_size = c.tgt_vocab_size = hf.Int("vocab_size", false, 32128);
  // spiece.model: <pad> 0, </s> 1, <unk> 2, no BOS; decoding starts with pad.
  c.pad_id = hf.Id("pad_token_id", 0);
  c.eos_id = hf.Id("eos_token_id", 1);
  c.unk_id = 2;
  c.bos_id = c.pad_id;  // T5 has no BOS; nothing starts with it
  c.decoder_start_id = hf.Id("decoder_start_token_id", c.pad_id);
  // Relative positions have no table to bound them; n_positions (older configs) is the
  // length T5 was trained on.
  c.max_positions = hf.Int("n_positions", false, 512);
  ApplyOverrides(options, &out);

  Sources src(ckpt, options.skip_prefixes);
  for (const auto& stack :
       {std::make_pair("encoder", c.encoder_layers), std::make_pair("decoder", c.decoder_layers)}) {
    const std::string prefix = std::string(stack.first) + ".block.";
    const int32_t layers = CountLayers(src, prefix);
    if (layers != stack.second) {
      throw Error(ckpt.label() + ": " + std::to_string(layers) + " layers (" + prefix +
                  "N) in the checkpoint, but " + label + " says \"" +
                  (stack.first[0] == 'e' ? "num_layers" : "num_decoder_layers") +
                  "\": " + std::to_string(stack.second));
    }
  }
  // The one embedding table: shared.weight, its tied copies verified and dropped.
  std::string table;
  for (const char* name :
       {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}) {
    if (!src.Has(name)) continue;
    if (table.empty()) {
      table = name;
    } else if (!SameValues(ckpt, table, name)) {
      throw Error(ckpt.label() + ": tensor \"" + name + "\" differs from \"" + table + "\"; " +
                  family.name + " shares one embedding table between its stacks");
    } else {
      out.notes.push_back(std::string("dropped ") + name + ": same table as " + table);
    }
    src.Use(name);
  }
  src.Direct(&out, "encoder.embed_tokens.weight", table.empty() ? "shared.weight" : table);
  if (tie) {
    if (src.Has("lm_head.weight")) {
      if (!table.empty() && !SameValues(ckpt, "lm_head.weight", table)) {
        throw Error(ckpt.label() + ": tensor \"lm_head.weight\" differs from \"" + table +
                    "\" although config tie_word_embeddings is true (transformers would "
                    "replace it)");
      }
      src.Use("lm_head.weight");
      out.notes.push_back("dropped lm_head.weight: tied to " + table);
    }
  } else {
    src.Direct(&out, "output_projection.weight", "lm_head.weight");
  }
  const char* kCrossBias = "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight";
  if (src.Has(kCrossBias)) {
    src.Use(kCrossBias);
    out.notes.push_back(std::string("dropped ") + kCrossBias +
                        ": transformers ignores it (cross-attention has no position bias)");
  }

  const double q_scale = std::sqrt(static_cast<double>(d_kv));
  auto attention = [&](const std::string& to, const std::string& from) {
    src.Direct(&out, to + "q_proj.weight", from + "q.weight");
    src.Direct(&out, to + "k_proj.weight", from + "k.weight");
    src.Direct(&out, to + "v_proj.weight", from + "v.weight");
    src.Direct(&out, to + "out_proj.weight", from + "o.weight");
    Scale(&out, to + "q_proj.weight", q_scale);
  };
  auto feed_forward = [&](const std::string& to, const std::string& from) {
    const std::string ff = from + "DenseReluDense.";
    if (c.activation == ref::Activation::kGeGLU) {
      src.Direct(&out, to + "fc1.weight", ff + "wi_0.weight");
      src.Direct(&out, to + "fc3.weight", ff + "wi_1.weight");
    } else {
      src.Direct(&out, to + "fc1.weight", ff + "wi.weight");
    }
    src.Direct(&out, to + "fc2.weight", ff + "wo.weight");
    src.Direct(&out, to + "final_layer_norm.weight", from + "layer_norm.weight");
  };
  for (const char* stack : {"encoder", "decoder"}) {
    const bool decoder = stack[0] == 'd';
    const std::string s = stack;
    src.Direct(&out, s + ".relative_attention_bias.weight",
               s + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight");
    for (int32_t i = 0; i < (decoder ? c.decoder_layers : c.encoder_layers); ++i) {
      const std::string from = s + ".block." + std::to_string(i) + ".layer.";
      const std::string to = s + ".layers." + std::to_string(i) + ".";
      attention(to + "self_attn.", from + "0.SelfAttention.");
      src.Direct(&out, to + "self_attn_layer_norm.weight", from + "0.layer_norm.weight");
      if (decoder) {
        attention(to + "encoder_attn.", from + "1.EncDecAttention.");
        src.Direct(&out, to + "encoder_attn_layer_norm.weight", from + "1.layer_norm.weight");
      }
      feed_forward(to, from + (decoder ? "2." : "1."));
    }
    src.Direct(&out, s + ".layer_norm.weight", s + ".final_layer_norm.weight");
  }
  if (tie)
    Scale(&out, "decoder.layer_norm.weight", 1.0 / std::sqrt(static_cast<double>(c.d_model)));
  out.notes.push_back("q projections x sqrt(d_kv) = " + std::to_string(q_scale) +
                      ": T5 does not divide its attention logits by sqrt(d_kv), tern does");
  if (tie) {
    out.notes.push_back(
        "decoder.layer_norm.weight x d_model^-0.5: tied T5 rescales the decoder output before "
        "the tied projection");
  }
  src.CheckAllUsed(std::string("(not part of a ") + family.name + " model with this config.json)");
  return out;
}

}  // namespace

MappedCheckpoint MapT5(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapT5Family(ckpt, options, kT5);
}

MappedCheckpoint MapMt5(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapT5Family(ckpt, options, kMt5);
}

}  // namespace tern::convert::arch
