// fairseq `transformer` translation checkpoints (checkpoint_best.pt: torch.save of a training
// checkpoint) with their dictionaries (dict.SRC.txt / dict.TGT.txt beside it).
//
// Options: "args" (an argparse.Namespace, fairseq < 0.10) or "cfg"["model"] (fairseq >= 0.10
// saved as plain containers; a dict or a Namespace). A key that is missing takes the default of
// the named arch function (fairseq/models/transformer: base_architecture and its presets, see
// ArchDefaults). Weights under "model" (DefaultCheckpointOptions); the rest of the checkpoint
// (extra_state meters, optimizer state) is read as opaque data and not used.
//
//   encoder.embed_tokens.weight [Vs, d], decoder.embed_tokens.weight [Vt, d]
//                                   one table with share_all_embeddings (verified, one kept)
//   {encoder,decoder}.embed_positions.weight   learned (*_learned_pos): max_*_positions + 2 rows,
//                                   the t-th token at row pad + 1 + t = t + 2 -> rows 2..
//   {encoder,decoder}.embed_positions._float_tensor  sinusoidal (fairseq's table, computed by the
//                                   runtime: sinusoid_layout fairseq counted from pad + 1): dropped
//   {encoder,decoder}.layernorm_embedding.*   with layernorm_embedding
//   encoder.layers.N.{self_attn.{q,k,v,out}_proj, self_attn_layer_norm, fc1, fc2,
//                     final_layer_norm}.{weight,bias}
//   decoder.layers.N.{... encoder_attn.*, encoder_attn_layer_norm.*}
//   {encoder,decoder}.layer_norm.*   with *_normalize_before (each pre-LN stack's final norm)
//   decoder.output_projection.weight (or decoder.embed_out)  the output layer; with
//                                   share_decoder_input_output_embed the decoder's table
//                                   (verified and dropped: tied)
//   {encoder,decoder}.version       bookkeeping buffers: dropped
//
// fairseq's Dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, then dict.txt's entries. One dictionary
// for both sides and a sentencepiece.bpe.model beside: the tokenizer is stored with its map
// through that dict.txt (MappedCheckpoint::vocabulary_dict, applied in convert.cc). The source
// ends with </s>; the decoder starts from </s>: fairseq's SequenceGenerator sets
// tokens[:, 0] = eos when no bos_token is given.
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/architectures/hf_seq2seq.h"
#include "converter/error.h"
#include "converter/tokenizer/vocab_map.h"

namespace tern::convert::arch {

namespace {

// fairseq's options (a JSON object) with the arch function's defaults for missing keys.
class FairseqArgs {
 public:
  FairseqArgs(nlohmann::json j, std::string label) : j_(std::move(j)), label_(std::move(label)) {}
  const std::string& label() const { return label_; }
  bool Set(const std::string& key) const { return j_.contains(key) && !j_[key].is_null(); }
  void Default(const std::string& key, const nlohmann::json& value) {
    if (!Set(key)) j_[key] = value;
  }
  int32_t Int(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_number_integer()) throw Error(label_ + ": \"" + key + "\" must be an integer");
    return v.get<int32_t>();
  }
  bool Bool(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_boolean()) throw Error(label_ + ": \"" + key + "\" must be true or false");
    return v.get<bool>();
  }
  std::string String(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_string()) throw Error(label_ + ": \"" + key + "\" must be a string");
    return v.get<std::string>();
  }
  double Number(const std::string& key, double fallback) const {
    if (!Set(key)) return fallback;
    Resolved(key);
    if (!j_[key].is_number()) return fallback;
    return j_[key].get<double>();
  }
  // A flag tern does not implement: refused when set true.
  void Refuse(const std::string& key, const std::string& why) const {
    if (Set(key)) Resolved(key);
    if (Set(key) && j_[key].is_boolean() && j_[key].get<bool>())
      throw Error(label_ + ": \"" + key + "\" is true: " + why + " is not supported");
  }

 private:
  const nlohmann::json& Get(const std::string& key) const {
    if (!Set(key)) throw Error(label_ + ": no \"" + key + "\" (and no default for it)");
    Resolved(key);
    return j_.at(key);
  }
  // An omegaconf cfg may hold "???" or "${...}" where an option is read: refused by its key.
  void Resolved(const std::string& key) const {
    PickleCheckResolved(j_.at(key), label_ + ": \"" + key + "\"");
  }
  nlohmann::json j_;
  std::string label_;
};

const char* const kArchs[] = {"transformer",
                              "transformer_iwslt_de_en",
                              "transformer_wmt_en_de",
                              "transformer_vaswani_wmt_en_de_big",
                              "transformer_vaswani_wmt_en_fr_big",
                              "transformer_wmt_en_de_big",
                              "transformer_wmt_en_de_big_t2t"};

// The arch functions' defaults (fairseq/models/transformer/transformer_legacy.py; in fairseq
// 0.9 models/transformer.py): each preset sets its keys, then base_architecture the rest.
void ArchDefaults(const std::string& arch, FairseqArgs* a) {
  if (arch == "transformer_iwslt_de_en") {
    a->Default("encoder_embed_dim", 512);
    a->Default("encoder_ffn_embed_dim", 1024);
    a->Default("encoder_attention_heads", 4);
    a->Default("encoder_layers", 6);
    a->Default("decoder_embed_dim", 512);
    a->Default("decoder_ffn_embed_dim", 1024);
    a->Default("decoder_attention_heads", 4);
    a->Default("decoder_layers", 6);
  }
  if (arch == "transformer_wmt_en_de_big_t2t") {  // big with pre-LN
    a->Default("encoder_normalize_before", true);
    a->Default("decoder_normalize_before", true);
  }
  if (arch.find("big") != std::string::npos) {  // transformer_vaswani_wmt_en_de_big and its kin
    a->Default("encoder_embed_dim", 1024);
    a->Default("encoder_ffn_embed_dim", 4096);
    a->Default("encoder_attention_heads", 16);
    a->Default("encoder_normalize_before", false);
    a->Default("decoder_embed_dim", 1024);
    a->Default("decoder_ffn_embed_dim", 4096);
    a->Default("decoder_attention_heads", 16);
  }
  // base_architecture (transformer, transformer_wmt_en_de):
  a->Default("encoder_embed_dim", 512);
  a->Default("encoder_ffn_embed_dim", 2048);
  a->Default("encoder_layers", 6);
  a->Default("encoder_attention_heads", 8);
  a->Default("encoder_normalize_before", false);
  a->Default("encoder_learned_pos", false);
  a->Default("decoder_embed_dim", a->Int("encoder_embed_dim"));
  a->Default("decoder_ffn_embed_dim", a->Int("encoder_ffn_embed_dim"));
  a->Default("decoder_layers", 6);
  a->Default("decoder_attention_heads", 8);
  a->Default("decoder_normalize_before", false);
  a->Default("decoder_learned_pos", false);
  a->Default("activation_fn", "relu");
  a->Default("share_decoder_input_output_embed", false);
  a->Default("share_all_embeddings", false);
  a->Default("no_token_positional_embeddings", false);
  a->Default("decoder_output_dim", a->Int("decoder_embed_dim"));
  a->Default("no_scale_embedding", false);
  a->Default("layernorm_embedding", false);
  a->Default("max_source_positions", 1024);  // DEFAULT_MAX_SOURCE_POSITIONS
  a->Default("max_target_positions", 1024);  // DEFAULT_MAX_TARGET_POSITIONS
}

ref::Activation FairseqActivation(const FairseqArgs& a) {
  const std::string name = a.String("activation_fn");
  if (name == "relu") return ref::Activation::kReLU;
  if (name == "gelu") return ref::Activation::kGELU;  // fairseq's utils.gelu: the exact erf form
  if (name == "gelu_fast" || name == "gelu_accurate") return ref::Activation::kGELUTanh;
  if (name == "swish" || name == "silu") return ref::Activation::kSwish;
  throw Error(a.label() + ": \"activation_fn\" = \"" + name +
              "\" is not supported; expected relu, gelu, gelu_fast, gelu_accurate or swish");
}

// The options: args (a Namespace), else cfg["model"].
FairseqArgs ReadArgs(const Checkpoint& ckpt) {
  const auto& objects = ckpt.objects();
  auto args = objects.find("args");
  if (args != objects.end() && args->second->kind != PickleValue::Kind::kNone)
    return FairseqArgs(PickleToJson(args->second, ckpt.label() + ": args"),
                       ckpt.label() + ": args");
  auto found = objects.find("cfg");
  // A cfg saved as an omegaconf DictConfig (fairseq < 0.12) reads through its _content.
  const PickleRef cfg = found == objects.end() ? nullptr : PickleOmegaConfContent(found->second);
  if (cfg && cfg->kind == PickleValue::Kind::kDict) {
    auto it = cfg->string_keys.find("model");
    if (it != cfg->string_keys.end()) {
      const PickleRef& model = cfg->dict[it->second].second;
      if (PickleOmegaConfContent(model)->kind == PickleValue::Kind::kDict) {
        // fairseq's structured configs default options to other options ("${model.x}").
        nlohmann::json options = PickleToJson(model, ckpt.label() + ": cfg.model");
        PickleResolveInterpolations(&options, found->second, ckpt.label() + ": cfg.model");
        return FairseqArgs(std::move(options), ckpt.label() + ": cfg.model");
      }
    }
    throw Error(ckpt.label() + ": \"cfg\" has no \"model\" options (a dict or a Namespace)");
  }
  throw Error(ckpt.label() +
              ": no \"args\" or \"cfg\" entry: not a fairseq training checkpoint (--arch fairseq "
              "reads the model's options from it)");
}

std::string Lang(const Checkpoint& ckpt, const FairseqArgs& a, const char* key) {
  if (a.Set(key)) return a.String(key);
  // cfg["task"] holds the language pair in fairseq >= 0.10.
  auto found = ckpt.objects().find("cfg");
  if (found == ckpt.objects().end()) return "";
  const PickleRef cfg = PickleOmegaConfContent(found->second);
  if (cfg->kind != PickleValue::Kind::kDict) return "";
  auto task = cfg->string_keys.find("task");
  if (task == cfg->string_keys.end()) return "";
  const PickleRef t = PickleOmegaConfContent(cfg->dict[task->second].second);
  if (t->kind != PickleValue::Kind::kDict) return "";
  auto it = t->string_keys.find(key);
  if (it == t->string_keys.end()) return "";
  const PickleRef& node = t->dict[it->second].second;  // a str, or an omegaconf value node
  if (PickleOmegaConfContent(node)->kind != PickleValue::Kind::kString) return "";
  nlohmann::json v = PickleToJson(node, ckpt.label() + ": cfg.task." + key);
  PickleResolveInterpolations(&v, found->second, ckpt.label() + ": cfg.task." + key);
  PickleCheckResolved(v, ckpt.label() + ": cfg.task: \"" + key + "\"");
  return v.get<std::string>();
}

std::vector<std::string> DictFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 9 && n.compare(0, 5, "dict.") == 0 && n.compare(n.size() - 4, 4, ".txt") == 0)
        out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// dict.SRC.txt / dict.TGT.txt: their sizes must be the embedding rows (4 specials + entries,
// fairseq's madeupwordNNNN padding to a multiple of 8 included or not in the file).
// One dictionary for both sides (share_all_embeddings, or equal files) numbers the pieces of a
// sentencepiece.bpe.model beside the checkpoint: out->vocabulary_dict.
void CheckDictionaries(const Checkpoint& ckpt, const FairseqArgs& a, int32_t src_rows,
                       int32_t tgt_rows, MappedCheckpoint* out) {
  std::vector<std::string>* notes = &out->notes;
  const std::string dir = DirName(ckpt.label());
  std::string src = Lang(ckpt, a, "source_lang"), tgt = Lang(ckpt, a, "target_lang");
  if (src.empty() || tgt.empty()) {
    const std::vector<std::string> files = DictFiles(dir);
    if (files.size() != 2) {
      notes->push_back("no source_lang / target_lang and " + std::to_string(files.size()) +
                       " dict.*.txt files beside the checkpoint: dictionaries not checked");
      return;
    }
    // Without the pair the order is unknown: each file must fit one of the tables.
    src = files[0].substr(5, files[0].size() - 9);
    tgt = files[1].substr(5, files[1].size() - 9);
    if (src_rows != tgt_rows) {
      notes->push_back("no source_lang / target_lang: " + files[0] + " and " + files[1] +
                       " checked in name order");
    }
  }
  for (const auto& side : {std::make_pair(src, src_rows), std::make_pair(tgt, tgt_rows)}) {
    const std::string path = dir + "/dict." + side.first + ".txt";
    if (!FileExists(path)) {
      notes->push_back("no " + path + ": the dictionary is not checked");
      continue;
    }
    const int64_t size = 4 + static_cast<int64_t>(ReadFairseqDict(path).size());
    const int64_t padded = (size + 7) / 8 * 8;
    if (size != side.second && padded != side.second) {
      throw Error(path + ": the dictionary has " + std::to_string(size) +
                  " entries with fairseq's 4 specials, but the embedding table has " +
                  std::to_string(side.second) + " rows (not this model's dictionary?)");
    }
  }
  const std::string src_dict = dir + "/dict." + src + ".txt",
                    tgt_dict = dir + "/dict." + tgt + ".txt";
  const bool one_dict =
      FileExists(src_dict) && FileExists(tgt_dict) &&
      (a.Bool("share_all_embeddings") || ReadTextFile(src_dict) == ReadTextFile(tgt_dict));
  const std::string spm = dir + "/sentencepiece.bpe.model";
  if (one_dict && FileExists(spm)) {
    out->vocabulary_dict = src_dict;
    notes->push_back(src_dict + " numbers the pieces of " + spm + " on both sides");
    return;
  }
  std::string tokenizer;
  for (const char* f : {"sentencepiece.bpe.model", "bpecodes", "code", "codes"}) {
    if (FileExists(dir + "/" + f)) tokenizer = dir + "/" + f;
  }
  notes->push_back(
      "no tokenizer stored: fairseq's dictionaries dict." + src + ".txt / dict." + tgt +
      ".txt number the tokens; encode the source with the model's own BPE" +
      (tokenizer.empty() ? std::string() : " (" + tokenizer + ")") +
      ", map tokens to ids with the dictionary (<s> 0, <pad> 1, </s> 2, <unk> 3, entry i -> 4 + "
      "i) and translate ids (tern translate --ids)");
}

}  // namespace

MappedCheckpoint MapFairseq(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  MappedCheckpoint out;
  FairseqArgs a = ReadArgs(ckpt);
  out.config_label = a.label();
  const std::string arch = a.Set("arch")    ? a.String("arch")
                           : a.Set("_name") ? a.String("_name")
                                            : "";
  if (std::find(std::begin(kArchs), std::end(kArchs), arch) == std::end(kArchs)) {
    std::string names;
    for (const char* n : kArchs) names += (names.empty() ? "" : ", ") + std::string(n);
    throw Error(a.label() + ": \"arch\" is \"" + arch +
                "\": --arch fairseq reads fairseq's transformer translation models only (" + names +
                ")");
  }
  ArchDefaults(arch, &a);
  a.Refuse("cross_self_attention", "cross+self attention");
  a.Refuse("no_cross_attention", "a decoder without encoder attention");
  a.Refuse("no_token_positional_embeddings", "a model without positions");
  a.Refuse("adaptive_input", "adaptive input embeddings");
  a.Refuse("char_inputs", "character inputs");
  a.Refuse("no_decoder_final_norm", "a pre-LN decoder without its final norm");
  if (a.Set("adaptive_softmax_cutoff")) {
    throw Error(a.label() +
                ": \"adaptive_softmax_cutoff\" is set: an adaptive softmax output is "
                "not supported");
  }
  for (const char* key : {"encoder_layers_to_keep", "decoder_layers_to_keep"}) {
    if (a.Set(key)) throw Error(a.label() + ": \"" + key + "\" (pruned layers) is not supported");
  }
  ModelConfig& c = out.config;
  c.d_model = a.Int("encoder_embed_dim");
  auto same = [&](const char* enc, const char* dec, const char* what) {
    if (a.Int(enc) != a.Int(dec)) {
      throw Error(a.label() + ": " + enc + " " + std::to_string(a.Int(enc)) + " != " + dec + " " +
                  std::to_string(a.Int(dec)) + "; the runtime uses one " + what);
    }
  };
  same("encoder_embed_dim", "decoder_embed_dim", "d_model");
  same("decoder_embed_dim", "decoder_output_dim", "d_model (no project_out_dim)");
  same("encoder_ffn_embed_dim", "decoder_ffn_embed_dim", "d_ff");
  same("encoder_attention_heads", "decoder_attention_heads", "head count");
  if (a.Bool("encoder_normalize_before") != a.Bool("decoder_normalize_before") ||
      a.Bool("encoder_learned_pos") != a.Bool("decoder_learned_pos")) {
    throw Error(a.label() +
                ": encoder and decoder differ in *_normalize_before or *_learned_pos; the "
                "runtime uses one norm placement and one position kind");
  }
  if (a.Number("quant_noise_pq", 0.0) > 0.0) {
    out.notes.push_back("quant_noise_pq: quantization noise acts in training only");
  }
  for (const char* key : {"encoder_layerdrop", "decoder_layerdrop"}) {
    if (a.Number(key, 0.0) > 0.0)
      out.notes.push_back(std::string("ignored ") + key + ": LayerDrop acts in training only");
  }
  c.d_ff = a.Int("encoder_ffn_embed_dim");
  c.heads = a.Int("encoder_attention_heads");
  c.encoder_layers = a.Int("encoder_layers");
  c.decoder_layers = a.Int("decoder_layers");
  c.activation = FairseqActivation(a);
  const bool pre = a.Bool("encoder_normalize_before");
  c.norm_placement = pre ? NormPlacement::kPre : NormPlacement::kPost;
  c.norm_kind = ref::NormKind::kLayerNorm;
  c.layer_norm_eps = 1e-5f;  // fairseq's LayerNorm: torch's default eps
  c.layernorm_embedding = a.Bool("layernorm_embedding");
  c.embedding_scale = a.Bool("no_scale_embedding")
                          ? 1.0f
                          : static_cast<float>(std::sqrt(static_cast<double>(c.d_model)));
  const bool learned = a.Bool("encoder_learned_pos");
  c.max_positions = std::min(a.Int("max_source_positions"), a.Int("max_target_positions"));
  if (learned) {
    c.position = PositionKind::kLearned;
  } else {
    c.position = PositionKind::kSinusoidal;
    c.sinusoid_layout = ref::SinusoidLayout::kFairseq;
  }
  c.bos_id = 0;
  c.pad_id = 1;
  c.eos_id = 2;
  c.unk_id = 3;
  c.decoder_start_id = 2;  // SequenceGenerator: tokens[:, 0] = eos

  Sources src(ckpt, options.skip_prefixes);
  const char* kEnc = "encoder.embed_tokens.weight";
  const char* kDec = "decoder.embed_tokens.weight";
  for (const char* name : {kEnc, kDec}) {
    if (!src.Has(name)) throw Error(ckpt.label() + ": required tensor \"" + name + "\" is missing");
  }
  const int32_t src_rows = static_cast<int32_t>(ckpt.at(kEnc).shape[0]);
  const int32_t tgt_rows = static_cast<int32_t>(ckpt.at(kDec).shape[0]);
  c.src_vocab_size = src_rows;
  c.tgt_vocab_size = tgt_rows;
  const bool share_all = a.Bool("share_all_embeddings");
  src.Direct(&out, "encoder.embed_tokens.weight", kEnc);
  if (share_all) {
    if (!SameValues(ckpt, kEnc, kDec)) {
      throw Error(ckpt.label() + ": tensor \"" + std::string(kDec) + "\" differs from \"" + kEnc +
                  "\" although share_all_embeddings is true");
    }
    src.Use(kDec);
    out.notes.push_back(std::string("dropped ") + kDec + ": same table as " + kEnc);
  } else {
    src.Direct(&out, "decoder.embed_tokens.weight", kDec);
  }
  c.shared_embeddings = share_all;
  std::string proj;
  for (const char* name : {"decoder.output_projection.weight", "decoder.embed_out"}) {
    if (src.Has(name)) proj = name;
  }
  c.tied_output = share_all || a.Bool("share_decoder_input_output_embed");
  if (c.tied_output) {
    if (!proj.empty()) {
      if (!SameValues(ckpt, proj, kDec)) {
        throw Error(ckpt.label() + ": tensor \"" + proj + "\" differs from \"" + kDec +
                    "\" although share_decoder_input_output_embed is true");
      }
      src.Use(proj);
      out.notes.push_back("dropped " + proj + ": tied to " + kDec);
    }
  } else {
    src.Direct(&out, "output_projection.weight",
               proj.empty() ? "decoder.output_projection.weight" : proj);
  }
  for (const char* stack : {"encoder", "decoder"}) {
    const std::string s = stack;
    if (learned) {
      const int64_t rows =
          a.Int(s == "encoder" ? "max_source_positions" : "max_target_positions") + kPositionOffset;
      OffsetPositions(src, &out, s + ".embed_positions.weight", s + ".embed_positions.weight", rows,
                      c.max_positions, c.d_model,
                      "max_" + std::string(s == "encoder" ? "source" : "target") +
                          "_positions + 2 rows: fairseq's learned positions from pad + 1");
    } else if (src.Has(s + ".embed_positions._float_tensor")) {
      src.Use(s + ".embed_positions._float_tensor");
    }
    if (src.Has(s + ".version")) src.Use(s + ".version");
  }
  out.notes.push_back(learned ? "learned positions: rows 2.. of {encoder,decoder}.embed_positions"
                                ".weight (fairseq's pad + 1 offset)"
                              : "sinusoidal positions: fairseq's table counted from pad + 1, "
                                "computed by the runtime");
  ApplyOverrides(options, &out);
  for (const auto& e : EncoderDecoderLayout(c)) {
    if (e.name.compare(0, 8, "encoder.") != 0 && e.name.compare(0, 8, "decoder.") != 0) continue;
    if (e.name.find(".embed_tokens.") != std::string::npos ||
        e.name.find(".embed_positions.") != std::string::npos)
      continue;
    src.Direct(&out, e.name, e.name);
  }
  src.CheckAllUsed("(not part of a fairseq transformer with these options)");
  CheckDictionaries(ckpt, a, src_rows, tgt_rows, &out);
  return out;
}

}  // namespace tern::convert::arch
