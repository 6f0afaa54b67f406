// torch.nn.Transformer (torch/nn/modules/transformer.py, activation.py) wrapped in a user's
// seq2seq module. nn.Transformer's own names, under the map's "prefix":
//
//   encoder.layers.N.self_attn.in_proj_weight [3d, d] (q; k; v rows), in_proj_bias [3d]
//   encoder.layers.N.self_attn.out_proj.{weight,bias}
//   encoder.layers.N.linear1.*, linear2.*, norm1.*, norm2.*          encoder.norm.*
//   decoder.layers.N.self_attn.*, multihead_attn.*, linear1/2, norm1/2/3   decoder.norm.*
//
// The parts outside nn.Transformer come from the JSON name map (--map, docs/converter.md):
//   {"prefix": "transformer.", "src_embedding": "src_tok_emb.embedding.weight",
//    "tgt_embedding": "tgt_tok_emb.embedding.weight", "generator": "generator",
//    "positions": [{"name": "positional_encoding.pos_embedding", "layout": "interleaved"}],
//    "ignore": ["..."], "config": {"heads": 8, "norm": "post", ...}}
#include <cmath>

#include "converter/architectures/architecture_util.h"
#include "converter/error.h"
#include "converter/model_config_json.h"

namespace tern::convert::arch {

namespace {

std::string MapString(const nlohmann::json& map, const char* key, const std::string& label,
                      bool required) {
  if (!map.contains(key) || map[key].is_null()) {
    if (required) throw Error(label + ": the map needs \"" + key + "\"");
    return "";
  }
  if (!map[key].is_string()) throw Error(label + ": map \"" + key + "\" must be a string");
  return map[key].get<std::string>();
}

// Maps one nn.MultiheadAttention (packed or separate q/k/v projections) onto canonical names.
void Attention(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to,
               int64_t d) {
  if (src->Has(from + ".q_proj_weight")) {  // kdim/vdim != embed_dim: separate projections
    src->Direct(out, to + ".q_proj.weight", from + ".q_proj_weight");
    src->Direct(out, to + ".k_proj.weight", from + ".k_proj_weight");
    src->Direct(out, to + ".v_proj.weight", from + ".v_proj_weight");
  } else {
    src->Rows(out, to + ".q_proj.weight", from + ".in_proj_weight", 0, d, 3 * d);
    src->Rows(out, to + ".k_proj.weight", from + ".in_proj_weight", d, d, 3 * d);
    src->Rows(out, to + ".v_proj.weight", from + ".in_proj_weight", 2 * d, d, 3 * d);
  }
  if (src->Has(from + ".in_proj_bias")) {
    src->Rows(out, to + ".q_proj.bias", from + ".in_proj_bias", 0, d, 3 * d);
    src->Rows(out, to + ".k_proj.bias", from + ".in_proj_bias", d, d, 3 * d);
    src->Rows(out, to + ".v_proj.bias", from + ".in_proj_bias", 2 * d, d, 3 * d);
  }
  src->Direct(out, to + ".out_proj.weight", from + ".out_proj.weight");
  src->Direct(out, to + ".out_proj.bias", from + ".out_proj.bias");
}

void Linear(Sources* src, MappedCheckpoint* out, const std::string& from, const std::string& to) {
  src->Direct(out, to + ".weight", from + ".weight");
  src->Direct(out, to + ".bias", from + ".bias");
}

}  // namespace

MappedCheckpoint MapNnTransformer(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  if (options.map.empty()) {
    throw Error(ckpt.label() +
                ": --arch nn_transformer needs --map MAP.json naming the embeddings and generator "
                "(see docs/converter.md)");
  }
  const std::string label = options.map;
  const nlohmann::json map = ParseJsonText(ReadTextFile(options.map), label);
  if (!map.is_object()) throw Error(label + ": the map is not a JSON object");
  static const char* const kKeys[] = {"prefix",    "src_embedding", "tgt_embedding", "generator",
                                      "positions", "ignore",        "config",        "comment"};
  for (auto it = map.begin(); it != map.end(); ++it) {
    bool known = false;
    for (const char* k : kKeys) known = known || it.key() == k;
    if (!known) throw Error(label + ": unknown map key \"" + it.key() + "\"");
  }
  const std::string prefix = MapString(map, "prefix", label, false);
  const std::string src_embedding = MapString(map, "src_embedding", label, true);
  std::string tgt_embedding = MapString(map, "tgt_embedding", label, false);
  const std::string generator = MapString(map, "generator", label, false);

  std::vector<std::string> skips = options.skip_prefixes;
  if (map.contains("ignore")) {
    if (!map["ignore"].is_array())
      throw Error(label + ": map \"ignore\" must be a list of tensor names or prefixes");
    for (const auto& v : map["ignore"]) {
      if (!v.is_string()) throw Error(label + ": map \"ignore\" must be a list of strings");
      skips.push_back(v.get<std::string>());
    }
  }
  Sources src(ckpt, skips);
  if (!src.Has(src_embedding)) {
    throw Error(ckpt.label() + ": map src_embedding \"" + src_embedding +
                "\" is not in the checkpoint");
  }

  MappedCheckpoint out;
  out.config_label = label + " + the weights";
  ModelConfig& c = out.config;
  // What the weights say.
  const CheckpointTensor& emb = ckpt.at(src_embedding);
  if (emb.shape.size() != 2)
    throw Error(emb.where + ": src_embedding \"" + src_embedding + "\" is not a matrix");
  c.src_vocab_size = static_cast<int32_t>(emb.shape[0]);
  c.d_model = static_cast<int32_t>(emb.shape[1]);
  c.tgt_vocab_size = c.src_vocab_size;
  if (!tgt_embedding.empty() && tgt_embedding != src_embedding) {
    if (!src.Has(tgt_embedding)) {
      throw Error(ckpt.label() + ": map tgt_embedding \"" + tgt_embedding +
                  "\" is not in the checkpoint");
    }
    const CheckpointTensor& tgt = ckpt.at(tgt_embedding);
    if (tgt.shape.size() != 2)
      throw Error(tgt.where + ": tgt_embedding \"" + tgt_embedding + "\" is not a matrix");
    c.tgt_vocab_size = static_cast<int32_t>(tgt.shape[0]);
    c.shared_embeddings = false;
  } else {
    tgt_embedding = src_embedding;
    c.shared_embeddings = true;
  }
  c.encoder_layers = CountLayers(src, prefix + "encoder.layers.");
  c.decoder_layers = CountLayers(src, prefix + "decoder.layers.");
  const std::string linear1 = prefix + "encoder.layers.0.linear1.weight";
  if (src.Has(linear1) && ckpt.at(linear1).shape.size() == 2)
    c.d_ff = static_cast<int32_t>(ckpt.at(linear1).shape[0]);
  c.tied_output = generator.empty();
  c.activation = ref::Activation::kReLU;  // nn.Transformer's default
  c.layer_norm_eps = 1e-5f;
  c.embedding_scale = 1.0f;
  c.heads = 0;
  c.max_positions = 1024;
  // Position buffers: verified, then dropped; their layout becomes the config's.
  if (map.contains("positions")) {
    if (!map["positions"].is_array()) throw Error(label + ": map \"positions\" must be a list");
    for (const auto& p : map["positions"]) {
      std::string name, layout = "interleaved";
      if (p.is_string()) {
        name = p.get<std::string>();
      } else if (p.is_object() && p.contains("name") && p["name"].is_string()) {
        name = p["name"].get<std::string>();
        if (p.contains("layout")) {
          if (!p["layout"].is_string()) throw Error(label + ": positions layout must be a string");
          layout = p["layout"].get<std::string>();
        }
      } else {
        throw Error(label +
                    ": each \"positions\" entry is a name or {\"name\": ..., \"layout\": ...}");
      }
      if (layout != "interleaved" && layout != "concatenated") {
        throw Error(label + ": positions layout \"" + layout +
                    "\"; expected interleaved or concatenated");
      }
      if (!src.Has(name))
        throw Error(ckpt.label() + ": map position table \"" + name +
                    "\" is not in the checkpoint");
      c.sinusoid_layout = layout == "interleaved" ? ref::SinusoidLayout::kInterleaved
                                                  : ref::SinusoidLayout::kConcatenated;
      c.max_positions = static_cast<int32_t>(VerifyPositionTable(
          ckpt, name, c.d_model, c.sinusoid_layout, options.ignore_position_mismatch, &out.notes));
      src.Use(name);
    }
  }
  // What only the user knows (heads, norm_first, activation, scale, ids), from the map's config.
  std::set<std::string> given;
  if (map.contains("config"))
    given = ApplyConfigOverrides(map["config"], label + " \"config\"", &c);
  ApplyOverrides(options, &out);
  if (!options.overrides_json.empty()) {
    const nlohmann::json overrides = ParseJsonText(options.overrides_json, "--set");
    for (auto it = overrides.begin(); it != overrides.end(); ++it) given.insert(it.key());
  }
  if (!given.count("heads")) {
    throw Error(label +
                ": the head count is not in the weights: set \"heads\" in the map's \"config\" (or "
                "--set heads=N)");
  }
  if (!given.count("norm")) {
    throw Error(label +
                ": nn.Transformer's norm_first is not in the weights: set \"norm\": \"pre\" "
                "(norm_first=True) or "
                "\"post\" in the map's \"config\" (or --set norm=...)");
  }
  const bool pre = c.norm_placement == NormPlacement::kPre;
  const bool final_norms =
      src.Has(prefix + "encoder.norm.weight") || src.Has(prefix + "decoder.norm.weight");
  // nn.Transformer always builds encoder.norm / decoder.norm, also after post-LN layers
  // (norm_first=False, its default); hand-built TransformerEncoder stacks may have none.
  if (!pre) c.post_ln_final_norm = final_norms;

  const int64_t d = c.d_model;
  src.Direct(&out, "encoder.embed_tokens.weight", src_embedding);
  if (!c.shared_embeddings) src.Direct(&out, "decoder.embed_tokens.weight", tgt_embedding);
  if (!generator.empty()) Linear(&src, &out, generator, "output_projection");
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string from = prefix + "encoder.layers." + std::to_string(i);
    const std::string to = "encoder.layers." + std::to_string(i);
    Attention(&src, &out, from + ".self_attn", to + ".self_attn", d);
    Linear(&src, &out, from + ".linear1", to + ".fc1");
    Linear(&src, &out, from + ".linear2", to + ".fc2");
    Linear(&src, &out, from + ".norm1", to + ".self_attn_layer_norm");
    Linear(&src, &out, from + ".norm2", to + ".final_layer_norm");
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string from = prefix + "decoder.layers." + std::to_string(i);
    const std::string to = "decoder.layers." + std::to_string(i);
    Attention(&src, &out, from + ".self_attn", to + ".self_attn", d);
    Attention(&src, &out, from + ".multihead_attn", to + ".encoder_attn", d);
    Linear(&src, &out, from + ".linear1", to + ".fc1");
    Linear(&src, &out, from + ".linear2", to + ".fc2");
    Linear(&src, &out, from + ".norm1", to + ".self_attn_layer_norm");
    Linear(&src, &out, from + ".norm2", to + ".encoder_attn_layer_norm");
    Linear(&src, &out, from + ".norm3", to + ".final_layer_norm");
  }
  if (c.has_final_norm()) {
    Linear(&src, &out, prefix + "encoder.norm", "encoder.layer_norm");
    Linear(&src, &out, prefix + "decoder.norm", "decoder.layer_norm");
  }
  src.CheckAllUsed("(not nn.Transformer's nor named in the map " + label +
                   "; add it to \"ignore\" if it is not part of "
                   "the model)");
  return out;
}

}  // namespace tern::convert::arch
