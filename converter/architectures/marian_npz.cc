// Marian C++ (marian-nmt) transformer models as Marian itself saves them: model.npz, a numpy
// zip whose arrays are named by src/models/transformer.h, with the training options embedded as
// YAML in the int8 array "special:model.yml".
//
//   Wemb                                   [V, d]    tied-embeddings-all / tied-embeddings-src
//   encoder_Wemb, decoder_Wemb             [V, d]    otherwise (decoder_Wemb also the output
//                                                    matrix with tied-embeddings)
//   encoder_lN_self_{Wq,Wk,Wv,Wo}          [d, d]    x W: stored [in, out], transposed here
//   encoder_lN_self_{bq,bk,bv,bo}          [1, d]
//   encoder_lN_self_Wo_ln_{scale,bias}     [1, d]    LayerNorm after the attention (post-LN)
//   encoder_lN_ffn_{W1,b1,W2,b2}           [d, ff] [1, ff] [ff, d] [1, d]
//   encoder_lN_ffn_ffn_ln_{scale,bias}     [1, d]
//   decoder_lN_self_*, decoder_lN_context_* (cross-attention), decoder_lN_ffn_*   likewise
//   decoder_ff_logit_out_W                 [d, V]    untied output only
//   decoder_ff_logit_out_b                 [1, V]
//   {encoder,decoder}_top_ln_{scale,bias}  [1, d]    pre-LN stacks ("transformer-postprocess-top:
//   n"),
//                                                    whose sub-layer norms end in "_pre"
//                                                    (encoder_lN_self_Wo_ln_scale_pre, ...)
//
// Layers count from 1. Embeddings are scaled by sqrt(dim-emb); positions are Marian's sinusoid
// (sines then cosines, frequencies 10000^(-i/(d/2-1)): tern's sinusoid_layout=concatenated);
// LayerNorm eps 1e-6 (transformer.h's layerNorm); swish or relu FFN.
//
// Decoding starts from a zero vector, not a token: Marian shifts the embedded target right and
// fills position 0 with zeros (then adds the position signal). tern decodes from a token, so,
// as transformers' convert_marian_to_pytorch.py does, the target vocabulary gets one more row
// (id V: an all-zero embedding, also used as padding) that is the decoder's start token, and its
// output bias is -1e9 so that it is never produced (transformers bans it at generation instead).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

constexpr const char* kModelYml = "special:model.yml";
// The start row's output bias: far below any real logit, finite so that beam scores stay
// finite.
constexpr float kStartLogitBias = -1e9f;

// The top-level `key: value` pairs of Marian's model.yml (yaml-cpp's output): scalars, flow
// lists ([a, b]) and block lists ("- a" lines). Nested maps are not used by the keys read here.
class MarianYaml {
 public:
  MarianYaml(const std::string& text, std::string label) : label_(std::move(label)) {
    std::istringstream in(text);
    std::string line, list_key;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find('\0') != std::string::npos) line = line.substr(0, line.find('\0'));
      const std::string t = Trim(line);
      if (t.empty() || t[0] == '#') continue;
      if (t.compare(0, 2, "- ") == 0 || t == "-") {
        if (!list_key.empty() && line[0] == ' ')
          lists_[list_key].push_back(Unquote(Trim(t.substr(1))));
        continue;
      }
      if (line[0] == ' ') continue;  // inside a nested map
      const size_t colon = t.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = Trim(t.substr(0, colon));
      const std::string value = Trim(t.substr(colon + 1));
      list_key.clear();
      if (value.empty()) {
        list_key = key;  // a block list (or nested map) follows
        lists_[key];
      } else if (value.front() == '[' && value.back() == ']') {
        std::vector<std::string>& items = lists_[key];
        std::istringstream parts(value.substr(1, value.size() - 2));
        std::string item;
        while (std::getline(parts, item, ',')) {
          if (!Trim(item).empty()) items.push_back(Unquote(Trim(item)));
        }
      } else {
        scalars_[key] = Unquote(value);
      }
    }
  }

  bool Has(const std::string& key) const { return scalars_.count(key) || lists_.count(key); }
  std::string String(const std::string& key, const std::string& fallback) const {
    auto it = scalars_.find(key);
    return it == scalars_.end() ? fallback : it->second;
  }
  int32_t Int(const std::string& key, int32_t fallback) const {
    auto it = scalars_.find(key);
    if (it == scalars_.end()) return fallback;
    return ParseInt(it->second, key);
  }
  bool Bool(const std::string& key, bool fallback) const {
    auto it = scalars_.find(key);
    if (it == scalars_.end()) return fallback;
    if (it->second == "true") return true;
    if (it->second == "false") return false;
    throw Error(label_ + ": \"" + key + "\" must be true or false, not \"" + it->second + "\"");
  }
  std::vector<int32_t> Ints(const std::string& key) const {
    std::vector<int32_t> out;
    auto it = lists_.find(key);
    if (it == lists_.end()) {
      if (scalars_.count(key)) out.push_back(Int(key, 0));
      return out;
    }
    for (const auto& v : it->second) out.push_back(ParseInt(v, key));
    return out;
  }

 private:
  static std::string Trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t") + 1 - b);
  }
  static std::string Unquote(const std::string& s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) {
      return s.substr(1, s.size() - 2);
    }
    return s;
  }
  int32_t ParseInt(const std::string& v, const std::string& key) const {
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || x < 0 || x > INT32_MAX) {
      throw Error(label_ + ": \"" + key + "\" must be a non-negative integer, not \"" + v + "\"");
    }
    return static_cast<int32_t>(x);
  }

  std::string label_;
  std::map<std::string, std::string> scalars_;
  std::map<std::string, std::vector<std::string>> lists_;
};

// canonical <- a Marian [in, out] matrix, transposed to [out, in].
void Transposed(Sources* src, MappedCheckpoint* out, const std::string& canonical,
                const std::string& source) {
  out->source_names[canonical] = source + " (transposed)";
  if (!src->Has(source)) return;
  src->Use(source);
  const Checkpoint* ckpt = &src->ckpt();
  out->tensors[canonical] =
      MappedTensor{source, [ckpt, source] {
                     HostTensor t = ckpt->Float(source);
                     if (t.shape.size() != 2) {
                       throw Error(ckpt->at(source).where + ": tensor \"" + source +
                                   "\" has shape " + t.shape_string() + ", expected a matrix");
                     }
                     const int64_t rows = t.shape[0], cols = t.shape[1];
                     HostTensor r;
                     r.name = source;
                     r.shape = {cols, rows};
                     r.values.resize(t.values.size());
                     for (int64_t i = 0; i < rows; ++i) {
                       for (int64_t j = 0; j < cols; ++j) {
                         r.values[j * rows + i] = t.values[i * cols + j];
                       }
                     }
                     return r;
                   }};
}

// canonical <- source [V, d] (or [d, V] transposed) with one zero row appended: the start row.
void WithStartRow(Sources* src, MappedCheckpoint* out, const std::string& canonical,
                  const std::string& source, bool transpose) {
  out->source_names[canonical] = source + " + a zero start row";
  if (!src->Has(source)) return;
  src->Use(source);
  const Checkpoint* ckpt = &src->ckpt();
  out->tensors[canonical] =
      MappedTensor{source, [ckpt, source, transpose] {
                     HostTensor t = ckpt->Float(source);
                     if (t.shape.size() != 2) {
                       throw Error(ckpt->at(source).where + ": tensor \"" + source +
                                   "\" has shape " + t.shape_string() + ", expected a matrix");
                     }
                     int64_t rows = t.shape[0], cols = t.shape[1];
                     HostTensor r;
                     r.name = source;
                     if (transpose) {
                       r.values.resize(t.values.size());
                       for (int64_t i = 0; i < rows; ++i)
                         for (int64_t j = 0; j < cols; ++j)
                           r.values[j * rows + i] = t.values[i * cols + j];
                       std::swap(rows, cols);
                     } else {
                       r.values = std::move(t.values);
                     }
                     r.values.resize(static_cast<size_t>((rows + 1) * cols), 0.0f);
                     r.shape = {rows + 1, cols};
                     return r;
                   }};
}

}  // namespace

MappedCheckpoint MapMarianNpz(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  std::string yml;
  if (!options.config.empty()) {
    yml = ReadTextFile(options.config);
    out.config_label = options.config;
  } else if (ckpt.has(kModelYml)) {
    yml = ckpt.Text(kModelYml);
    out.config_label = ckpt.label() + " (" + kModelYml + ")";
  } else {
    throw Error(ckpt.label() + ": --arch marian_npz needs the model's options: the array \"" +
                kModelYml + "\" (Marian embeds it) or --config model.yml");
  }
  const MarianYaml y(yml, out.config_label);
  const std::string& label = out.config_label;
  const std::string type = y.String("type", "transformer");
  if (type != "transformer") {
    throw Error(label + ": \"type\" is \"" + type +
                "\"; only Marian's \"transformer\" is supported");
  }
  auto refuse_unless = [&](const std::string& key, const std::string& want,
                           const std::string& got) {
    if (got != want) {
      throw Error(label + ": \"" + key + "\" = \"" + got + "\" is not supported (only \"" + want +
                  "\")");
    }
  };
  refuse_unless("transformer-decoder-autoreg", "self-attention",
                y.String("transformer-decoder-autoreg", "self-attention"));
  if (y.Int("transformer-ffn-depth", 2) != 2 || y.Int("transformer-decoder-ffn-depth", 0) > 2) {
    throw Error(label + ": an FFN depth other than 2 (\"transformer-ffn-depth\") is not supported");
  }
  if (y.Bool("transformer-train-position-embeddings", false)) {
    throw Error(label + ": \"transformer-train-position-embeddings\": true is not supported");
  }
  if (y.String("transformer-postprocess-emb", "d").find('n') != std::string::npos) {
    throw Error(label + ": \"transformer-postprocess-emb\" with a LayerNorm (n) is not supported");
  }
  // Post-LN ("dan": dropout, add, norm after each sub-layer) or pre-LN ("n" before, "da" after,
  // a final norm per stack from "transformer-postprocess-top: n").
  const std::string pre = y.String("transformer-preprocess", "");
  const std::string post = y.String("transformer-postprocess", "dan");
  const std::string top = y.String("transformer-postprocess-top", "");
  ModelConfig& c = out.config;
  if (pre.find('n') == std::string::npos && post == "dan" && top.empty()) {
    c.norm_placement = NormPlacement::kPost;
  } else if (pre == "n" && post == "da" && top == "n") {
    c.norm_placement = NormPlacement::kPre;
  } else {
    throw Error(label + ": transformer-preprocess \"" + pre + "\", transformer-postprocess \"" +
                post + "\", transformer-postprocess-top \"" + top +
                "\" is not supported (post-LN: \"\", \"dan\", \"\"; pre-LN: \"n\", \"da\", \"n\")");
  }
  c.d_model = y.Int("dim-emb", 512);
  c.heads = y.Int("transformer-heads", 8);
  c.encoder_layers = y.Int("enc-depth", 6);
  c.decoder_layers = y.Int("dec-depth", 6);
  c.d_ff = y.Int("transformer-dim-ffn", 2048);
  if (y.Has("transformer-decoder-dim-ffn") && y.Int("transformer-decoder-dim-ffn", 0) != 0 &&
      y.Int("transformer-decoder-dim-ffn", 0) != c.d_ff) {
    throw Error(label +
                ": \"transformer-decoder-dim-ffn\" differs from \"transformer-dim-ffn\"; the "
                "runtime uses one d_ff");
  }
  const std::string act = y.String("transformer-ffn-activation", "swish");
  if (act == "swish") {
    c.activation = ref::Activation::kSwish;
  } else if (act == "relu") {
    c.activation = ref::Activation::kReLU;
  } else {
    throw Error(label + ": \"transformer-ffn-activation\" = \"" + act +
                "\" is not supported (swish, relu)");
  }
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = 1e-6f;
  c.position = PositionKind::kSinusoidal;
  c.sinusoid_layout = ref::SinusoidLayout::kConcatenated;
  c.embedding_scale = static_cast<float>(std::sqrt(static_cast<double>(c.d_model)));
  const std::vector<int32_t> vocabs = y.Ints("dim-vocabs");
  if (vocabs.size() != 2) {
    throw Error(label + ": \"dim-vocabs\" must list two sizes (source, target)");
  }
  const bool tied_all = y.Bool("tied-embeddings-all", false);
  const bool tied_src = y.Bool("tied-embeddings-src", false);
  const bool tied_out = y.Bool("tied-embeddings", false) || tied_all;
  if ((tied_all || tied_src) && vocabs[0] != vocabs[1]) {
    throw Error(label + ": shared embeddings need equal \"dim-vocabs\"");
  }
  c.shared_embeddings = tied_all || tied_src;
  c.tied_output = tied_out;
  const int32_t start = vocabs[1];  // the appended zero row
  c.tgt_vocab_size = vocabs[1] + 1;
  c.src_vocab_size = c.shared_embeddings ? c.tgt_vocab_size : vocabs[0];
  c.eos_id = 0;  // Marian vocabularies: </s> 0, <unk> 1
  c.unk_id = 1;
  c.bos_id = 0;  // Marian has no BOS; unused by the runtime
  c.decoder_start_id = start;
  c.pad_id = c.shared_embeddings ? start : 0;  // padded source rows are masked either way
  c.max_positions = std::max<int32_t>(1024, y.Int("max-length", 0));
  out.notes.push_back("decoder start: appended zero row " + std::to_string(start) +
                      " (Marian starts from a zero vector), output bias -1e9");
  ApplyOverrides(options, &out);

  Sources src(ckpt, options.skip_prefixes);
  src.Use(kModelYml);
  const std::string enc_emb = c.shared_embeddings ? "Wemb" : "encoder_Wemb";
  const std::string dec_emb = c.shared_embeddings ? "Wemb" : "decoder_Wemb";
  if (c.shared_embeddings) {
    WithStartRow(&src, &out, "encoder.embed_tokens.weight", enc_emb, false);
  } else {
    src.Direct(&out, "encoder.embed_tokens.weight", enc_emb);
    WithStartRow(&src, &out, "decoder.embed_tokens.weight", dec_emb, false);
  }
  if (!c.tied_output) {
    WithStartRow(&src, &out, "output_projection.weight", "decoder_ff_logit_out_W", true);
  }
  // The output bias, with the start row's -1e9 (created when the model has no bias).
  {
    const std::string bias = "decoder_ff_logit_out_b";
    out.source_names["output_projection.bias"] = bias;
    const bool has = src.Has(bias);
    if (has) src.Use(bias);
    const Checkpoint* ck = &ckpt;
    const int64_t vt = vocabs[1];
    out.tensors["output_projection.bias"] = MappedTensor{
        has ? bias : "(none: zeros)", [ck, bias, has, vt] {
          HostTensor t;
          t.name = bias;
          if (has) {
            t = ck->Float(bias);
            if (t.elements() != vt) {
              throw Error(ck->at(bias).where + ": tensor \"" + bias + "\" has shape " +
                          t.shape_string() + ", expected [1, " + std::to_string(vt) + "]");
            }
          } else {
            t.values.assign(static_cast<size_t>(vt), 0.0f);
          }
          t.values.push_back(kStartLogitBias);
          t.shape = {vt + 1};
          return t;
        }};
  }

  auto attention = [&](const std::string& canonical, const std::string& m) {
    for (const char* p : {"q", "k", "v", "o"}) {
      const std::string part = std::string(p) == "o" ? "out_proj" : std::string(p) + "_proj";
      Transposed(&src, &out, canonical + "." + part + ".weight", m + "_W" + p);
      src.Squeeze(&out, canonical + "." + part + ".bias", m + "_b" + p);
    }
  };
  // transformer.h names a sub-layer's norm <prefix>_ln_{scale,bias}, with the suffix "_pre"
  // when it is a pre-processing (pre-LN) norm; the stacks' final norms are post-processing.
  const std::string sub = c.norm_placement == NormPlacement::kPre ? "_pre" : "";
  auto norm = [&](const std::string& canonical, const std::string& m, const std::string& suffix) {
    src.Squeeze(&out, canonical + ".weight", m + "_ln_scale" + suffix);
    src.Squeeze(&out, canonical + ".bias", m + "_ln_bias" + suffix);
  };
  auto ffn = [&](const std::string& layer, const std::string& m) {
    Transposed(&src, &out, layer + ".fc1.weight", m + "_ffn_W1");
    src.Squeeze(&out, layer + ".fc1.bias", m + "_ffn_b1");
    Transposed(&src, &out, layer + ".fc2.weight", m + "_ffn_W2");
    src.Squeeze(&out, layer + ".fc2.bias", m + "_ffn_b2");
    norm(layer + ".final_layer_norm", m + "_ffn_ffn", sub);
  };
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    const std::string m = "encoder_l" + std::to_string(i + 1);
    attention(layer + ".self_attn", m + "_self");
    norm(layer + ".self_attn_layer_norm", m + "_self_Wo", sub);
    ffn(layer, m);
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    const std::string m = "decoder_l" + std::to_string(i + 1);
    attention(layer + ".self_attn", m + "_self");
    norm(layer + ".self_attn_layer_norm", m + "_self_Wo", sub);
    attention(layer + ".encoder_attn", m + "_context");
    norm(layer + ".encoder_attn_layer_norm", m + "_context_Wo", sub);
    ffn(layer, m);
  }
  if (c.has_final_norm()) {
    norm("encoder.layer_norm", "encoder_top", "");
    norm("decoder.layer_norm", "decoder_top", "");
  }
  src.CheckAllUsed("(not part of a Marian transformer with these options)");
  return out;
}

}  // namespace tern::convert::arch
