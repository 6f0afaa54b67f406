// The Annotated Transformer's make_model (harvardnlp/annotated-transformer,
// the_annotated_transformer.py): EncoderDecoder(Encoder, Decoder, src_embed, tgt_embed,
// generator). Its state_dict names:
//
//   encoder.layers.N.self_attn.linears.{0,1,2,3}.{weight,bias}    q, k, v, output projection
//   encoder.layers.N.feed_forward.w_1.*, w_2.*
//   encoder.layers.N.sublayer.{0,1}.norm.{a_2,b_2}                 before self-attn / FFN
//   encoder.norm.{a_2,b_2}
//   decoder.layers.N.self_attn.linears.*, src_attn.linears.*, feed_forward.*,
//   decoder.layers.N.sublayer.{0,1,2}.norm.*                       decoder.norm.*
//   src_embed.0.lut.weight, tgt_embed.0.lut.weight                 Embeddings (x sqrt(d_model))
//   src_embed.1.pe, tgt_embed.1.pe                                 PositionalEncoding buffer [1,
//   5000, d] generator.proj.{weight,bias}                                   (then log_softmax)
//
// SublayerConnection is pre-LN (x + dropout(sublayer(norm(x)))), Encoder/Decoder end with a
// LayerNorm, and its LayerNorm is a_2 * (x - mean) / (std + eps) + b_2 with the unbiased std and
// eps 1e-6: norm_kind layer_norm_std_eps. The FFN is ReLU; positions are the paper's interleaved
// sinusoids. Special ids default to the notebook's vocabularies (specials <s>, </s>, <blank>,
// <unk>): bos 0, eos 1, pad 2, unk 3, decoding starts from <s>.
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/error.h"
#include "converter/model_config_json.h"

namespace tern::convert::arch {

namespace {

void Linear(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to) {
  src->Direct(out, to + ".weight", from + ".weight");
  src->Direct(out, to + ".bias", from + ".bias");
}

void Norm(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to) {
  src->Direct(out, to + ".weight", from + ".a_2");
  src->Direct(out, to + ".bias", from + ".b_2");
}

void Attention(Sources* src, MappedCheckpoint* out, const std::string& from,
               const std::string& to) {
  const char* parts[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
  for (int k = 0; k < 4; ++k)
    Linear(src, out, from + ".linears." + std::to_string(k), to + "." + parts[k]);
}

}  // namespace

MappedCheckpoint MapAnnotated(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  Sources src(ckpt, options.skip_prefixes);
  MappedCheckpoint out;
  out.config_label = "the weights (--arch annotated)";
  ModelConfig& c = out.config;
  const char* kSrc = "src_embed.0.lut.weight";
  const char* kTgt = "tgt_embed.0.lut.weight";
  for (const char* name : {kSrc, kTgt}) {
    if (!src.Has(name))
      throw Error(ckpt.label() + ": tensor \"" + std::string(name) +
                  "\" is missing (not an Annotated "
                  "Transformer make_model state_dict?)");
    if (ckpt.at(name).shape.size() != 2)
      throw Error(ckpt.at(name).where + ": tensor \"" + name + "\" is not a matrix");
  }
  c.d_model = static_cast<int32_t>(ckpt.at(kSrc).shape[1]);
  c.src_vocab_size = static_cast<int32_t>(ckpt.at(kSrc).shape[0]);
  c.tgt_vocab_size = static_cast<int32_t>(ckpt.at(kTgt).shape[0]);
  c.encoder_layers = CountLayers(src, "encoder.layers.");
  c.decoder_layers = CountLayers(src, "decoder.layers.");
  const std::string w1 = "encoder.layers.0.feed_forward.w_1.weight";
  if (src.Has(w1) && ckpt.at(w1).shape.size() == 2)
    c.d_ff = static_cast<int32_t>(ckpt.at(w1).shape[0]);
  c.heads = 0;
  c.activation = ref::Activation::kReLU;
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kLayerNormStdEps;
  c.layer_norm_eps = 1e-6f;
  c.position = PositionKind::kSinusoidal;
  c.sinusoid_layout = ref::SinusoidLayout::kInterleaved;
  c.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(c.d_model)));
  c.bos_id = 0;
  c.eos_id = 1;
  c.pad_id = 2;
  c.unk_id = 3;
  c.decoder_start_id = 0;
  c.max_positions = 5000;  // PositionalEncoding's max_len
  for (const char* name : {"src_embed.1.pe", "tgt_embed.1.pe"}) {
    if (!src.Has(name)) continue;
    c.max_positions = static_cast<int32_t>(VerifyPositionTable(
        ckpt, name, c.d_model, c.sinusoid_layout, options.ignore_position_mismatch, &out.notes));
    src.Use(name);
  }
  // The head count is not in the weights (make_model's default h is 8): ask for it.
  std::set<std::string> given;
  if (!options.config.empty()) {
    given = ApplyConfigOverrides(ParseJsonText(ReadTextFile(options.config), options.config),
                                 options.config, &c);
    out.config_label += " + " + options.config;
  }
  ApplyOverrides(options, &out);
  if (!options.overrides_json.empty()) {
    const nlohmann::json overrides = ParseJsonText(options.overrides_json, "--set");
    for (auto it = overrides.begin(); it != overrides.end(); ++it) given.insert(it.key());
  }
  if (!given.count("heads")) {
    throw Error(
        ckpt.label() +
        ": the head count is not in the weights: pass --set heads=N (make_model's h; its default "
        "is 8)");
  }

  src.Direct(&out, "encoder.embed_tokens.weight", kSrc);
  src.Direct(&out, "decoder.embed_tokens.weight", kTgt);
  c.shared_embeddings = false;
  c.tied_output = false;
  Linear(&src, &out, "generator.proj", "output_projection");
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string from = "encoder.layers." + std::to_string(i);
    const std::string to = from;
    Attention(&src, &out, from + ".self_attn", to + ".self_attn");
    Linear(&src, &out, from + ".feed_forward.w_1", to + ".fc1");
    Linear(&src, &out, from + ".feed_forward.w_2", to + ".fc2");
    Norm(&src, &out, from + ".sublayer.0.norm", to + ".self_attn_layer_norm");
    Norm(&src, &out, from + ".sublayer.1.norm", to + ".final_layer_norm");
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string from = "decoder.layers." + std::to_string(i);
    const std::string to = from;
    Attention(&src, &out, from + ".self_attn", to + ".self_attn");
    Attention(&src, &out, from + ".src_attn", to + ".encoder_attn");
    Linear(&src, &out, from + ".feed_forward.w_1", to + ".fc1");
    Linear(&src, &out, from + ".feed_forward.w_2", to + ".fc2");
    Norm(&src, &out, from + ".sublayer.0.norm", to + ".self_attn_layer_norm");
    Norm(&src, &out, from + ".sublayer.1.norm", to + ".encoder_attn_layer_norm");
    Norm(&src, &out, from + ".sublayer.2.norm", to + ".final_layer_norm");
  }
  Norm(&src, &out, "encoder.norm", "encoder.layer_norm");
  Norm(&src, &out, "decoder.norm", "decoder.layer_norm");
  src.CheckAllUsed("(not part of the Annotated Transformer's make_model)");
  return out;
}

}  // namespace tern::convert::arch
