// OpenNMT-py 3.x training checkpoints (model_step_N.pt: torch.save of {"model", "generator",
// "vocab", "opt", "optim"}): the Transformer of encoder_type / decoder_type "transformer". The
// reader puts "generator"'s tensors beside "model"'s as generator.NAME
// (DefaultCheckpointOptions); "opt" (an argparse.Namespace) and "vocab" are read as JSON.
//
//   encoder.embeddings.make_embedding.emb_luts.0.weight   [V_src, d]
//   encoder.embeddings.make_embedding.pe.pe               sinusoid buffer: verified, dropped
//   encoder.transformer.N.self_attn.{linear_query,linear_keys,linear_values,final_linear}.*
//   encoder.transformer.N.self_attn.relative_positions_embeddings.weight   (Shaw; keys = values)
//   encoder.transformer.N.layer_norm.*                    -> self_attn_layer_norm
//   encoder.transformer.N.feed_forward.{w_1,w_2,w_3}.*    -> fc1, fc2, fc3 (gated: w_3 = up)
//   encoder.transformer.N.feed_forward.layer_norm.*       -> final_layer_norm
//   encoder.layer_norm.*                                  -> encoder.layer_norm
//   decoder.transformer_layers.N.{self_attn, context_attn, layer_norm_1, layer_norm_2,
//                                 feed_forward}.*         -> self_attn, encoder_attn, ...
//   decoder.layer_norm.*, decoder.embeddings.*
//   generator.{weight,bias} (3.x nn.Linear) or generator.0.* (2.x nn.Sequential)
//
// Pre-LN with a final norm per stack (OpenNMT-py's only Transformer layout), embeddings scaled by
// sqrt(d) only with position_encoding (OpenNMT-py scales inside its PositionalEncoding),
// special tokens from the vocabulary lists (<unk>, <blank> = pad, <s>, </s>), decoding from
// decoder_start_token (<s>). Options tern does not run are refused by name.
#include "converter/architectures/opennmt.h"

#include <cmath>
#include <map>
#include <set>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/hf_config.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

// A signed integer option (max_relative_positions is -2, -1, 0 or k > 0).
int64_t SignedOption(const nlohmann::json& opt, const char* key, int64_t fallback,
                     const std::string& label) {
  if (!opt.contains(key) || opt[key].is_null()) return fallback;
  if (!opt[key].is_number_integer()) throw Error(label + ": \"" + key + "\" must be an integer");
  return opt[key].get<int64_t>();
}

// The token list of vocab[side] (3.x: a list of strings).
std::vector<std::string> VocabList(const nlohmann::json& vocab, const char* side,
                                   const std::string& label) {
  if (!vocab.contains(side) || !vocab[side].is_array()) {
    throw Error(label + ": \"vocab\" has no \"" + side +
                "\" list of tokens (OpenNMT-py 3.x's vocab dict)");
  }
  std::vector<std::string> out;
  for (const auto& t : vocab[side]) {
    if (!t.is_string()) throw Error(label + ": vocab \"" + side + "\" holds a non-string entry");
    out.push_back(t.get<std::string>());
  }
  return out;
}

int32_t TokenId(const std::vector<std::string>& tokens, const std::string& token, const char* side,
                const std::string& label) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == token) return static_cast<int32_t>(i);
  }
  throw Error(label + ": vocab \"" + side + "\" has no \"" + token + "\"");
}

void Linear(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to) {
  src->Direct(out, to + ".weight", from + ".weight");
  src->Direct(out, to + ".bias", from + ".bias");
}

void Attention(Sources* src, MappedCheckpoint* out, const std::string& from,
               const std::string& to) {
  Linear(src, out, from + ".linear_query", to + ".q_proj");
  Linear(src, out, from + ".linear_keys", to + ".k_proj");
  Linear(src, out, from + ".linear_values", to + ".v_proj");
  Linear(src, out, from + ".final_linear", to + ".out_proj");
}

// OpenNMT-py's one relative table serves keys and values (Shaw et al.'s a^K = a^V).
void Relative(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to) {
  const std::string name = from + ".relative_positions_embeddings.weight";
  src->Direct(out, to + ".relative_key.weight", name);
  src->Direct(out, to + ".relative_value.weight", name);
}

}  // namespace

MappedCheckpoint MapOpenNmt(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  if (!ckpt.objects().count("opt")) {
    throw Error(ckpt.label() +
                ": no \"opt\" entry: --arch opennmt reads an OpenNMT-py training checkpoint "
                "(model, generator, vocab, opt)");
  }
  const nlohmann::json opt = ckpt.ObjectJson("opt");
  nlohmann::json vocab;
  try {
    vocab = ckpt.ObjectJson("vocab");
  } catch (const Error& e) {
    throw Error(std::string(e.what()) +
                "; OpenNMT-py 2.x's torchtext vocabulary objects are not read: convert the "
                "checkpoint with OpenNMT-py 3.x's tools/convertv2_v3.py first");
  }
  return MapOpenNmtOptions(ckpt, opt, vocab, options);
}

MappedCheckpoint MapOpenNmtOptions(const Checkpoint& ckpt, const nlohmann::json& opt,
                                   const nlohmann::json& vocab,
                                   const ArchitectureOptions& options) {
  MappedCheckpoint out;
  const std::string label = ckpt.label() + ": opt";
  out.config_label = label;
  if (!opt.is_object()) throw Error(label + ": not an options object (argparse.Namespace)");
  const HfConfig o(opt, label, "OpenNMT-py");
  if (!vocab.is_object()) {
    throw Error(ckpt.label() +
                ": no \"vocab\" dict (OpenNMT-py 3.x's {\"src\": [...], "
                "\"tgt\": [...]})");
  }

  // What tern does not run, by name.
  for (const char* key : {"encoder_type", "decoder_type"}) {
    const std::string v = o.String(key, "transformer");
    if (v != "transformer") {
      throw Error(label + ": \"" + key + "\" is \"" + v +
                  "\"; --arch opennmt converts the Transformer only (encoder_type and "
                  "decoder_type \"transformer\")");
    }
  }
  if (o.String("model_type", "text") != "text") {
    throw Error(label + ": \"model_type\" is \"" + o.String("model_type", "") +
                "\"; only \"text\" models are supported");
  }
  if (o.Bool("copy_attn", false)) {
    throw Error(label +
                ": \"copy_attn\" is true: the copy generator (pointer-generator) is not "
                "supported");
  }
  if (o.String("self_attn_type", "scaled-dot") != "scaled-dot") {
    throw Error(label + ": \"self_attn_type\" is \"" + o.String("self_attn_type", "") +
                "\"; only \"scaled-dot\" is supported (the average attention network is not)");
  }
  if (o.Bool("parallel_residual", false)) {
    throw Error(label + ": \"parallel_residual\" is true, which is not supported");
  }
  if (vocab.contains("src_feats") && !vocab["src_feats"].is_null() && !vocab["src_feats"].empty()) {
    throw Error(ckpt.label() + ": vocab has \"src_feats\": source features are not supported");
  }
  if (o.has("lambda_align") && o.Number("lambda_align", 0.0f) > 0.0f) {
    out.notes.push_back(
        "ignored lambda_align / alignment_layer: guided alignment trains one cross-attention "
        "head; translation does not use it");
  }

  ModelConfig& c = out.config;
  c.norm_placement = NormPlacement::kPre;
  const std::string norm = o.String("layer_norm", "standard");
  if (norm != "standard" && norm != "rms") {
    throw Error(label + ": \"layer_norm\" is \"" + norm + "\"; expected standard or rms");
  }
  c.norm_kind = norm == "rms" ? ref::NormKind::kRMSNorm : ref::NormKind::kLayerNorm;
  c.layer_norm_eps = o.Number("norm_eps", 1e-6f);
  const std::string act = o.String("pos_ffn_activation_fn", "relu");
  if (act == "relu") {
    c.activation = ref::Activation::kReLU;
  } else if (act == "gelu") {
    c.activation = ref::Activation::kGELU;
  } else if (act == "fast_gelu") {
    c.activation = ref::Activation::kGELUTanh;
  } else if (act == "silu") {
    c.activation = ref::Activation::kSwish;
  } else if (act == "gated-silu") {
    c.activation = ref::Activation::kSwiGLU;
  } else {
    throw Error(label + ": \"pos_ffn_activation_fn\" is \"" + act +
                "\"; expected relu, gelu, fast_gelu, silu or gated-silu (gated-gelu's exact "
                "GELU is not tern's geglu)");
  }

  // Sizes: the options, checked against each other (the runtime has one d_model).
  c.heads = o.Int("heads", false, 8);
  c.encoder_layers = o.Int("enc_layers", false, 6);
  c.decoder_layers = o.Int("dec_layers", false, 6);
  c.d_ff = o.Int("transformer_ff", false, 2048);
  c.d_model = o.Int("hidden_size", false, o.Int("rnn_size", false, 512));
  for (const char* key : {"enc_hid_size", "dec_hid_size", "enc_rnn_size", "dec_rnn_size",
                          "word_vec_size", "src_word_vec_size", "tgt_word_vec_size"}) {
    if (o.has(key) && o.Int(key, false) != c.d_model) {
      throw Error(label + ": \"" + key + "\" is " + std::to_string(o.Int(key, false)) +
                  ", not hidden_size " + std::to_string(c.d_model) +
                  "; the runtime uses one d_model");
    }
  }
  const int32_t num_kv = o.Count("num_kv", 0);
  if (num_kv > 0 && num_kv != c.heads) c.kv_heads = num_kv;

  // Positions: position_encoding (sinusoids) or max_relative_positions.
  const bool pe = o.Bool("position_encoding", true);
  const int64_t rel = SignedOption(opt, "max_relative_positions", 0, label);
  if (rel == -1) {
    throw Error(label +
                ": \"max_relative_positions\" is -1 (rotary embeddings): not supported for "
                "OpenNMT-py encoder-decoder models");
  }
  if (rel == -2) {
    throw Error(label + ": \"max_relative_positions\" is -2 (ALiBi), which is not supported");
  }
  if (rel < 0) {
    throw Error(label + ": \"max_relative_positions\" is " + std::to_string(rel) +
                "; expected 0, a clip distance > 0, -1 or -2");
  }
  if (pe && rel > 0) {
    throw Error(label +
                ": position_encoding and max_relative_positions > 0 together (sinusoids and "
                "relative positions) are not supported");
  }
  c.max_positions = 5000;  // PositionalEncoding's max_len
  if (rel > 0) {
    c.position = PositionKind::kRelative;
    c.relative_attention = RelativeAttention::kShaw;
    c.relative_max_distance = static_cast<int32_t>(rel);
  } else if (pe) {
    c.position = PositionKind::kSinusoidal;
    const std::string type = o.String("position_encoding_type", "SinusoidalInterleaved");
    if (type == "SinusoidalInterleaved") {
      c.sinusoid_layout = ref::SinusoidLayout::kInterleaved;
    } else if (type == "SinusoidalConcat") {
      c.sinusoid_layout = ref::SinusoidLayout::kConcatenated;
    } else {
      throw Error(label + ": \"position_encoding_type\" is \"" + type +
                  "\"; expected SinusoidalInterleaved or SinusoidalConcat");
    }
  } else {
    c.position = PositionKind::kNone;
  }
  c.embedding_scale = pe ? static_cast<float>(std::sqrt(static_cast<double>(c.d_model))) : 1.0f;
  out.notes.push_back(std::string("embedding_scale = ") + (pe ? "sqrt(d_model)" : "1") +
                      " (OpenNMT-py scales embeddings with position_encoding only)");

  // Vocabularies and special tokens.
  const std::vector<std::string> src_vocab = VocabList(vocab, "src", ckpt.label());
  const std::vector<std::string> tgt_vocab = VocabList(vocab, "tgt", ckpt.label());
  c.src_vocab_size = static_cast<int32_t>(src_vocab.size());
  c.tgt_vocab_size = static_cast<int32_t>(tgt_vocab.size());
  c.unk_id = TokenId(tgt_vocab, "<unk>", "tgt", ckpt.label());
  c.pad_id = TokenId(tgt_vocab, "<blank>", "tgt", ckpt.label());
  c.bos_id = TokenId(tgt_vocab, "<s>", "tgt", ckpt.label());
  c.eos_id = TokenId(tgt_vocab, "</s>", "tgt", ckpt.label());
  std::string start = "<s>";
  if (vocab.contains("decoder_start_token") && vocab["decoder_start_token"].is_string()) {
    start = vocab["decoder_start_token"].get<std::string>();
  } else if (o.has("decoder_start_token")) {
    start = o.String("decoder_start_token", "<s>");
  }
  c.decoder_start_id = TokenId(tgt_vocab, start, "tgt", ckpt.label());
  if (TokenId(src_vocab, "<blank>", "src", ckpt.label()) != c.pad_id) {
    throw Error(ckpt.label() + ": \"<blank>\" is " +
                std::to_string(TokenId(src_vocab, "<blank>", "src", ckpt.label())) +
                " in vocab \"src\" but " + std::to_string(c.pad_id) +
                " in \"tgt\"; the runtime uses one pad id");
  }
  out.notes.push_back(
      "no tokenizer stored: the caller tokenizes (tern translate --ids) with the ids of the "
      "vocab lists, and appends no </s> to a source (OpenNMT-py appends none)");

  // Embeddings: one table with share_embeddings; the generator tied with
  // share_decoder_embeddings. Stored copies must agree.
  Sources src(ckpt, options.skip_prefixes);
  const std::string enc_emb = "encoder.embeddings.make_embedding.emb_luts.0.weight";
  const std::string dec_emb = "decoder.embeddings.make_embedding.emb_luts.0.weight";
  for (const std::string& name : {enc_emb, dec_emb}) {
    if (!src.Has(name)) {
      throw Error(ckpt.label() + ": tensor \"" + name +
                  "\" is missing (not an OpenNMT-py Transformer checkpoint?)");
    }
  }
  for (const auto& side :
       {std::make_pair(enc_emb, c.src_vocab_size), std::make_pair(dec_emb, c.tgt_vocab_size)}) {
    const CheckpointTensor& t = ckpt.at(side.first);
    if (t.shape.size() != 2 || t.shape[0] != side.second || t.shape[1] != c.d_model) {
      throw Error(t.where + ": tensor \"" + side.first + "\" has shape " + t.shape_string() +
                  ", expected [" + std::to_string(side.second) + ", " + std::to_string(c.d_model) +
                  "] (the vocabulary's " + std::to_string(side.second) + " tokens x hidden_size)");
    }
  }
  c.shared_embeddings = o.Bool("share_embeddings", false);
  src.Direct(&out, "encoder.embed_tokens.weight", enc_emb);
  if (c.shared_embeddings) {
    if (!SameValues(ckpt, enc_emb, dec_emb)) {
      throw Error(ckpt.label() + ": tensor \"" + dec_emb + "\" differs from \"" + enc_emb +
                  "\" although opt share_embeddings is true");
    }
    src.Use(dec_emb);
    out.notes.push_back("dropped " + dec_emb + ": same table as " + enc_emb);
  } else {
    src.Direct(&out, "decoder.embed_tokens.weight", dec_emb);
  }
  const std::string gen = src.Has("generator.0.weight") ? "generator.0" : "generator";
  c.tied_output = o.Bool("share_decoder_embeddings", false);
  if (c.tied_output) {
    if (src.Has(gen + ".weight")) {
      if (!SameValues(ckpt, gen + ".weight", dec_emb)) {
        throw Error(ckpt.label() + ": tensor \"" + gen + ".weight\" differs from \"" + dec_emb +
                    "\" although opt share_decoder_embeddings is true");
      }
      src.Use(gen + ".weight");
      out.notes.push_back("dropped " + gen + ".weight: tied to " + dec_emb);
    }
  } else {
    src.Direct(&out, "output_projection.weight", gen + ".weight");
  }
  src.Direct(&out, "output_projection.bias", gen + ".bias");

  for (const char* stack : {"encoder", "decoder"}) {
    const std::string name = std::string(stack) + ".embeddings.make_embedding.pe.pe";
    if (!src.Has(name)) continue;
    if (!pe) {
      throw Error(ckpt.label() + ": tensor \"" + name +
                  "\" (a sinusoid table) although opt position_encoding is false");
    }
    c.max_positions = static_cast<int32_t>(VerifyPositionTable(
        ckpt, name, c.d_model, c.sinusoid_layout, options.ignore_position_mismatch, &out.notes));
    src.Use(name);
  }

  // A final norm with a bias is a LayerNorm: with layer_norm rms, every norm must be RMSNorm.
  if (c.norm_kind == ref::NormKind::kRMSNorm) {
    for (const auto& kv : ckpt.tensors()) {
      const std::string& n = kv.first;
      if (n.find("norm") != std::string::npos && n.size() > 5 &&
          n.compare(n.size() - 5, 5, ".bias") == 0 && !src.Skipped(n)) {
        throw Error(ckpt.label() + ": tensor \"" + n +
                    "\" is a LayerNorm bias although opt layer_norm is rms (mixed LayerNorm and "
                    "RMSNorm are not supported)");
      }
    }
  }

  // tern's kv_heads holds for every attention; OpenNMT-py's num_kv must then shape them all.
  const int64_t kv_rows = static_cast<int64_t>(c.kv_head_count()) * c.d_head();
  for (const auto& kv : ckpt.tensors()) {
    const std::string& n = kv.first;
    const std::string suffix = ".linear_keys.weight";
    if (n.size() <= suffix.size() || src.Skipped(n) ||
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    if (kv.second.shape.size() == 2 && kv.second.shape[0] != kv_rows) {
      throw Error(kv.second.where + ": tensor \"" + n + "\" has " +
                  std::to_string(kv.second.shape[0]) + " rows, but opt num_kv " +
                  std::to_string(num_kv) + " with " + std::to_string(c.heads) + " heads gives " +
                  std::to_string(kv_rows) +
                  " in every attention (the runtime has one K/V head count)");
    }
  }

  ApplyOverrides(options, &out);
  const int32_t enc_layers = CountLayers(src, "encoder.transformer.");
  const int32_t dec_layers = CountLayers(src, "decoder.transformer_layers.");
  if (enc_layers != c.encoder_layers || dec_layers != c.decoder_layers) {
    throw Error(label + ": enc_layers " + std::to_string(c.encoder_layers) + " / dec_layers " +
                std::to_string(c.decoder_layers) + " but the checkpoint has " +
                std::to_string(enc_layers) + " / " + std::to_string(dec_layers) + " layers");
  }
  const bool gated = c.activation == ref::Activation::kSwiGLU;
  auto ffn = [&](const std::string& from, const std::string& to) {
    Linear(&src, &out, from + ".feed_forward.w_1", to + ".fc1");
    Linear(&src, &out, from + ".feed_forward.w_2", to + ".fc2");
    if (gated) Linear(&src, &out, from + ".feed_forward.w_3", to + ".fc3");
    Linear(&src, &out, from + ".feed_forward.layer_norm", to + ".final_layer_norm");
  };
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string from = "encoder.transformer." + std::to_string(i);
    const std::string to = "encoder.layers." + std::to_string(i);
    Attention(&src, &out, from + ".self_attn", to + ".self_attn");
    if (rel > 0) Relative(&src, &out, from + ".self_attn", to + ".self_attn");
    Linear(&src, &out, from + ".layer_norm", to + ".self_attn_layer_norm");
    ffn(from, to);
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string from = "decoder.transformer_layers." + std::to_string(i);
    const std::string to = "decoder.layers." + std::to_string(i);
    Attention(&src, &out, from + ".self_attn", to + ".self_attn");
    if (rel > 0) Relative(&src, &out, from + ".self_attn", to + ".self_attn");
    Attention(&src, &out, from + ".context_attn", to + ".encoder_attn");
    Linear(&src, &out, from + ".layer_norm_1", to + ".self_attn_layer_norm");
    Linear(&src, &out, from + ".layer_norm_2", to + ".encoder_attn_layer_norm");
    ffn(from, to);
  }
  Linear(&src, &out, "encoder.layer_norm", "encoder.layer_norm");
  Linear(&src, &out, "decoder.layer_norm", "decoder.layer_norm");
  src.CheckAllUsed("(not part of an OpenNMT-py Transformer with these options)");
  return out;
}

}  // namespace tern::convert::arch
