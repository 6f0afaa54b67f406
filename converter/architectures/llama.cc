// Hugging Face LLaMA-layout checkpoints and their config.json, onto tern's decoder-only layout
// with rotary positions, RMSNorm and SwiGLU. One map serves the families that share
// transformers' modeling_llama.py names (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM;
// model.safetensors / pytorch_model.bin, sharded or not). Per layer N, "L." = "model.layers.N."
// and "D." = "decoder.layers.N.":
//
//   model.embed_tokens.weight            [V, d]     decoder.embed_tokens.weight
//   L.input_layernorm.weight             [d]        D.self_attn_layer_norm.weight
//   L.self_attn.q_proj.weight            [d, d]     D.self_attn.q_proj.weight
//   L.self_attn.{k,v}_proj.weight        [d_kv, d]  D.self_attn.{k,v}_proj.weight
//   L.self_attn.{q,k,v}_proj.bias        [d], [d_kv] D.self_attn.{q,k,v}_proj.bias (Qwen2 only)
//   L.self_attn.o_proj.weight            [d, d]     D.self_attn.out_proj.weight
//   L.post_attention_layernorm.weight    [d]        D.final_layer_norm.weight
//   L.mlp.gate_proj.weight               [ff, d]    D.fc1.weight (SwiGLU's gate W1)
//   L.mlp.up_proj.weight                 [ff, d]    D.fc3.weight (the up projection W3)
//   L.mlp.down_proj.weight               [d, ff]    D.fc2.weight (W2)
//   model.norm.weight                    [d]        decoder.layer_norm.weight
//   lm_head.weight                       [V, d]     output_projection.weight (untied), or
//                                                   verified equal to embed_tokens and dropped
//   L.self_attn.rotary_emb.inv_freq, model.rotary_emb.inv_freq
//                                                   RoPE frequencies (a buffer older transformers
//                                                   saved): verified against rope_theta and
//                                                   rope_scaling, dropped
//
// config.json: hidden_size, num_attention_heads, num_key_value_heads (grouped-query attention:
// LLaMA 2 70B, LLaMA 3, TinyLlama, SmolLM, Qwen2, Mistral), intermediate_size,
// num_hidden_layers, rms_norm_eps, rope_theta, rope_scaling (rope_scaling.h: linear, llama3),
// vocab_size, max_position_embeddings, tie_word_embeddings, bos/eos/pad ids, sliding_window
// (Mistral; Qwen2 with use_sliding_window). What tern does not compute (experts, logit
// soft-capping, windows on some layers only, biases the family does not have, ...) is refused
// by name.
//
// Weights are nn.Linear ([out, in], tern's layout): nothing is transposed. The q/k rows need no
// reordering either: transformers' convert_llama_weights_to_hf.py permutes Meta's
// interleaved-pair rows into the "rotate_half" layout (dimension i rotates with i + d_head/2),
// which is how tern's rotary kernel pairs dimensions (docs/CONVENTIONS.md;
// tools/fixtures/make_llama_fixture.py checks the equivalence numerically). The "model." prefix
// is absent in LlamaModel (no LM head) state dicts.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "converter/architectures/architecture_util.h"
#include "converter/architectures/decoder_only_layout.h"
#include "converter/architectures/hf_config.h"
#include "converter/architectures/rope_scaling.h"
#include "converter/error.h"
#include "runtime/core/fp16.h"

namespace tern::convert::arch {

namespace {

// What distinguishes the families that share the LLaMA layout.
struct Family {
  const char* arch;                   // --arch
  const char* model_type;             // config.json's
  const char* name;                   // in messages
  bool qkv_bias;                      // q/k/v projections with biases (Qwen2; o_proj never has one)
  const char* sliding_window_switch;  // the key that turns "sliding_window" on, or null: always
  int32_t default_max_positions;      // the config class's max_position_embeddings
  // Gemma (1): GeGLU FFN, embeddings scaled by sqrt(hidden_size), RMSNorm gains stored as
  // w with the norm computing (1 + w), tied output, head_dim independent of hidden_size.
  bool gemma;
  // Sliding-window attention where config.json sets a window (Mistral; Qwen2 when
  // use_sliding_window, on the layers from max_window_layers on).
  bool windowed;
};

const Family kLlama{"llama", "llama", "LLaMA", false, nullptr, 2048, false, false};
const Family kQwen2{"qwen2", "qwen2", "Qwen2", true, "use_sliding_window", 32768, false, true};
const Family kMistral{"mistral", "mistral", "Mistral", false, nullptr, 4096 * 32, false, true};
const Family kGemma{"gemma", "gemma", "Gemma", false, nullptr, 8192, true, false};
const Family* const kFamilies[] = {&kLlama, &kQwen2, &kMistral, &kGemma};

// bfloat16 / float16 rounding of a float32 (round to nearest even), for Gemma's normalizer.
float RoundToDType(float v, const std::string& dtype) {
  if (dtype == "bfloat16") {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  if (dtype == "float16") return Fp16ToFp32(Fp32ToFp16(v));
  return v;
}

// Keys of related configs that change the computation in ways tern does not implement: present
// with anything but null / false / 0, they are refused by name.
const struct {
  const char* key;
  const char* what;
} kUnimplemented[] = {
    {"attn_logit_softcapping", "attention logit soft-capping"},
    {"final_logit_softcapping", "final logit soft-capping"},
    {"num_local_experts", "mixture of experts"},
    {"num_experts", "mixture of experts"},
    {"num_experts_per_tok", "mixture of experts"},
    {"moe_intermediate_size", "mixture of experts"},
    {"shared_expert_intermediate_size", "mixture of experts"},
    {"query_pre_attn_scalar", "a query scale other than 1/sqrt(head_dim)"},
    {"qk_norm", "query/key normalization"},
};

bool IsSet(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0.0;
  return true;
}

// The sliding window of a windowed family (0: none, or one no shorter than the context, which
// never drops a key). Mistral: "sliding_window" on every layer (null: none). Qwen2: only with
// "use_sliding_window", and only on the layers from "max_window_layers" on (the first ones
// attend to everything): tern runs one window for all layers or none.
int32_t SlidingWindow(const HfConfig& hf, const std::string& label, const Family& family,
                      int32_t max_positions, int32_t layers) {
  if (!family.windowed) return 0;
  if (family.sliding_window_switch != nullptr && !hf.Bool(family.sliding_window_switch, false))
    return 0;
  if (!hf.has("sliding_window") || !IsSet(hf.at("sliding_window"))) return 0;
  const int32_t window = hf.Int("sliding_window", false);
  if (window >= max_positions) return 0;
  if (family.sliding_window_switch != nullptr) {
    const int32_t full = hf.Count("max_window_layers", 0);
    if (full >= layers) return 0;
    if (full > 0) {
      throw Error(label + ": \"max_window_layers\" = " + std::to_string(full) + " of " +
                  std::to_string(layers) + " layers: " + family.name +
                  " layers with and without a sliding window in one model are not supported");
    }
  }
  return window;
}

// Refuses a config field whose value the runtime cannot compute, naming it.
void RefuseUnsupported(const HfConfig& hf, const std::string& label, const Family& family,
                       int32_t heads, int32_t max_positions) {
  const std::string model_type = hf.String("model_type", family.model_type);
  if (model_type != family.model_type) {
    std::string hint;
    for (const Family* f : kFamilies) {
      if (model_type == f->model_type)
        hint = " (convert it with --arch " + std::string(f->arch) + ")";
    }
    throw Error(label + ": \"model_type\" is \"" + model_type + "\", not \"" + family.model_type +
                "\"" + hint);
  }
  const int32_t kv_heads = hf.Int("num_key_value_heads", false, heads);
  if (kv_heads < 1 || heads % kv_heads != 0) {
    throw Error(label + ": \"num_key_value_heads\" = " + std::to_string(kv_heads) +
                " does not divide \"num_attention_heads\" = " + std::to_string(heads) +
                " (grouped-query attention shares each K/V head among heads / kv_heads query "
                "heads)");
  }
  for (const auto& u : kUnimplemented) {
    if (hf.has(u.key) && IsSet(hf.at(u.key))) {
      throw Error(label + ": \"" + u.key + "\" = " + hf.at(u.key).dump() + ": " + u.what +
                  " is not supported");
    }
  }
  if (hf.has("partial_rotary_factor") && hf.at("partial_rotary_factor") != 1.0) {
    throw Error(label + ": \"partial_rotary_factor\" = " + hf.at("partial_rotary_factor").dump() +
                ": partial rotary positions are not supported in " + family.name);
  }
  // A window at least as long as the context never drops a key: the plain causal attention.
  // Mistral and Qwen2 compute one (SlidingWindow); the other families have none.
  const bool window_on =
      family.sliding_window_switch == nullptr || hf.Bool(family.sliding_window_switch, false);
  if (!family.windowed && window_on && hf.has("sliding_window") && IsSet(hf.at("sliding_window"))) {
    const int32_t window = hf.Int("sliding_window", false);
    if (window < max_positions) {
      throw Error(label + ": \"sliding_window\" = " + std::to_string(window) +
                  " is shorter than \"max_position_embeddings\" = " +
                  std::to_string(max_positions) + ": " + family.name +
                  " has no sliding-window attention (a window of at least the "
                  "context length, or null, is taken)");
    }
  }
  if (hf.Bool("attention_bias", false)) {
    throw Error(label + ": \"attention_bias\" is true: " + family.name +
                " attention projections with biases are not supported");
  }
  if (hf.Bool("mlp_bias", false)) {
    throw Error(label + ": \"mlp_bias\" is true: " + family.name +
                " MLP projections with biases are not supported");
  }
  if (family.gemma) {
    // GeGLU with the tanh GELU (Gemma's reference; transformers' gelu_pytorch_tanh). The first
    // Gemma configs said "gelu" for it, and newer ones add hidden_activation, which wins.
    const char* key = hf.has("hidden_activation") ? "hidden_activation" : "hidden_act";
    const std::string act = hf.String(key, "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh" && act != "gelu_tanh" &&
        !(act == "gelu" && std::string(key) == "hidden_act")) {
      throw Error(label + ": \"" + key + "\" = \"" + act +
                  "\" is not supported; Gemma's MLP is GeGLU with the tanh GELU, "
                  "down(gelu_tanh(gate(x)) * up(x))");
    }
    return;
  }
  const std::string act = hf.String("hidden_act", "silu");
  if (act != "silu") {
    throw Error(label + ": \"hidden_act\" = \"" + act + "\" is not supported; " + family.name +
                "'s MLP is SwiGLU, down(silu(gate(x)) * up(x)), so it must be \"silu\"");
  }
}

// A rotary frequency buffer must be the frequencies of rope_theta and rope_scaling for i <
// d_head/2 (transformers computes them in float32 and may store them as f16/bf16): otherwise
// the checkpoint was trained with other positions than the config says, and the runtime's own
// table would silently differ.
void VerifyInvFreq(const Checkpoint& ckpt, const std::string& name, const ModelConfig& c,
                   std::vector<std::string>* notes) {
  const int64_t d_head = c.d_head();
  const HostTensor t = ckpt.Float(name);
  const std::string where = ckpt.at(name).where + ": rotary buffer \"" + name + "\"";
  const int64_t half = d_head / 2;
  if (t.shape != std::vector<int64_t>{half}) {
    throw Error(where + " has shape " + t.shape_string() + ", expected [" + std::to_string(half) +
                "] (head size / 2: partial rotary is not part of LLaMA)");
  }
  const ref::RotaryFrequencies f = RotaryFrequenciesOf(c);
  const SourceDType stored = ckpt.at(name).dtype;
  const double tol = stored == SourceDType::kF16    ? 1e-3
                     : stored == SourceDType::kBF16 ? 8e-3
                                                    : 1e-5;
  for (int64_t i = 0; i < half; ++i) {
    const double want = ref::RotaryFrequency(f, i, d_head);
    const double got = t.values[static_cast<size_t>(i)];
    if (!(std::fabs(got - want) <= tol * want)) {
      char detail[160];
      std::snprintf(detail, sizeof detail, "index %lld: %.7g stored, %.7g from rope_theta = %g",
                    static_cast<long long>(i), got, want, static_cast<double>(c.rotary_base));
      throw Error(where + " is not the frequency table of config.json's rope_theta" +
                  (c.rotary_scaling != ref::RotaryScaling::kNone ? " and rope_scaling" : "") +
                  " (" + detail +
                  "); fix rope_theta, or --skip-prefix the buffer to use the config's value");
    }
  }
  notes->push_back("verified and dropped " + name + ": the rotary frequencies of rope_theta" +
                   (c.rotary_scaling != ref::RotaryScaling::kNone ? " and rope_scaling" : ""));
}

MappedCheckpoint MapLlamaFamily(const Checkpoint& ckpt, const ArchitectureOptions& options,
                                const Family& family) {
  MappedCheckpoint out;
  const nlohmann::json j = ReadHfConfigJson(ckpt, options, family.arch, &out);
  const HfConfig hf(j, out.config_label, family.name);
  ModelConfig& c = out.config;
  c.architecture = Architecture::kDecoderOnly;
  c.d_model = hf.Int("hidden_size", true);
  c.heads = hf.Int("num_attention_heads", true);
  c.max_positions = hf.Int("max_position_embeddings", false, family.default_max_positions);
  RefuseUnsupported(hf, out.config_label, family, c.heads, c.max_positions);
  c.kv_heads = hf.Int("num_key_value_heads", false, c.heads);  // grouped-query when < heads
  // head_dim (Gemma: 256 whatever hidden_size; Mistral Nemo): the head size, stored only when
  // heads * head_dim is not hidden_size.
  c.head_dim = hf.Int("head_dim", family.gemma, 0);
  if (c.head_dim != 0 && static_cast<int64_t>(c.head_dim) * c.heads == c.d_model) c.head_dim = 0;
  if (c.head_dim == 0 && c.d_model % c.heads != 0) {
    throw Error(out.config_label + ": \"num_attention_heads\" = " + std::to_string(c.heads) +
                " does not divide \"hidden_size\" = " + std::to_string(c.d_model));
  }
  if (c.d_head() % 2 != 0) {
    throw Error(out.config_label + ": the head size " +
                (hf.has("head_dim") ? "head_dim" : "hidden_size / num_attention_heads") + " = " +
                std::to_string(c.d_head()) +
                " is odd; rotary positions pair dimension i with i + head_size / 2");
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
  c.sliding_window = SlidingWindow(hf, out.config_label, family, c.max_positions, c.decoder_layers);
  c.activation = family.gemma ? ref::Activation::kGeGLU : ref::Activation::kSwiGLU;
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kRMSNorm;
  c.layer_norm_eps = hf.Number("rms_norm_eps", 1e-6f);  // LlamaConfig's default
  c.position = PositionKind::kRotary;
  c.rotary_dim = 0;  // all of d_head
  c.rotary_base = hf.Number("rope_theta", 10000.0f);
  if (!(c.rotary_base > 0.0f)) throw Error(out.config_label + ": \"rope_theta\" must be > 0");
  MapRopeScaling(hf, out.config_label, &c);
  c.embedding_scale = 1.0f;
  if (family.gemma) {
    // Gemma multiplies the embeddings by sqrt(hidden_size) as a tensor of the activations'
    // dtype: run in the checkpoint's torch_dtype (bfloat16 for the released models), the
    // normalizer is rounded to it (sqrt(2048) = 45.2548 becomes 45.25). tern computes in
    // float32 but takes the normalizer the model ran with: rounded to config.json's torch_dtype
    // when that is bfloat16 or float16, float32 otherwise.
    const std::string dtype = hf.String("torch_dtype", "float32");
    c.embedding_scale =
        RoundToDType(static_cast<float>(std::sqrt(static_cast<double>(c.d_model))), dtype);
    char note[160];
    std::snprintf(note, sizeof note,
                  "embedding scale sqrt(hidden_size) = %.9g (rounded to torch_dtype %s)",
                  static_cast<double>(c.embedding_scale), dtype.c_str());
    out.notes.push_back(note);
  }
  c.shared_embeddings = false;
  c.src_vocab_size = 0;
  c.tgt_vocab_size = hf.Int("vocab_size", true);
  // LLaMA's SentencePiece vocabulary: <unk> 0, <s> 1, </s> 2 (LlamaConfig's and
  // MistralConfig's defaults). It has no padding token; pad points at EOS as for GPT-2
  // (generation never pads). Qwen2's config class has no default ids (its tokenizer starts
  // nothing with BOS): eos_token_id is required there, and BOS defaults to it.
  if (family.qkv_bias && !hf.has("eos_token_id")) {
    throw Error(out.config_label + ": " + family.name + " config lacks \"eos_token_id\"");
  }
  // Gemma: <pad> 0, <eos> 1, <bos> 2 (GemmaConfig's defaults).
  c.eos_id = hf.Id("eos_token_id", family.gemma ? 1 : 2);
  c.bos_id = hf.Id("bos_token_id", family.qkv_bias ? c.eos_id : family.gemma ? 2 : 1);
  c.pad_id = hf.Id("pad_token_id", family.gemma ? 0 : c.eos_id);
  c.unk_id = 0;
  c.decoder_start_id = c.bos_id;
  const bool tie = hf.Bool("tie_word_embeddings", family.gemma);  // GemmaConfig ties
  if (family.gemma && !tie) {
    throw Error(out.config_label +
                ": \"tie_word_embeddings\" is false: Gemma's output layer is "
                "its embedding (GemmaForCausalLM ties them)");
  }
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
  // Gemma's RMSNorm multiplies by (1 + w): the file stores the gain 1 + w (in float32, as
  // Gemma computes its norms), which tern's RMSNorm multiplies by.
  auto norm = [&](const std::string& canonical, const std::string& source) {
    src.Direct(&out, canonical, source);
    if (!family.gemma || !out.tensors.count(canonical)) return;
    MappedTensor& t = out.tensors[canonical];
    t.load = [load = t.load] {
      HostTensor h = load();
      for (float& v : h.values) v = static_cast<float>(1.0 + static_cast<double>(v));
      return h;
    };
  };
  norm("decoder.layer_norm.weight", p + "norm.weight");
  auto inv_freq = [&](const std::string& name) {
    if (!src.Has(name)) return;
    src.Use(name);
    VerifyInvFreq(ckpt, name, c, &out.notes);
  };
  inv_freq(p + "rotary_emb.inv_freq");
  for (int32_t i = 0; i < c.decoder_layers; ++i) {
    const std::string h = p + "layers." + std::to_string(i) + ".";
    const std::string layer = "decoder.layers." + std::to_string(i) + ".";
    norm(layer + "self_attn_layer_norm.weight", h + "input_layernorm.weight");
    src.Direct(&out, layer + "self_attn.q_proj.weight", h + "self_attn.q_proj.weight");
    src.Direct(&out, layer + "self_attn.k_proj.weight", h + "self_attn.k_proj.weight");
    src.Direct(&out, layer + "self_attn.v_proj.weight", h + "self_attn.v_proj.weight");
    src.Direct(&out, layer + "self_attn.out_proj.weight", h + "self_attn.o_proj.weight");
    if (family.qkv_bias) {  // Qwen2: q, k and v have biases (o_proj has none), always
      for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
        const std::string name = h + "self_attn." + proj + ".bias";
        if (!src.Has(name)) {
          throw Error(ckpt.label() + ": tensor \"" + name + "\" is missing (" + family.name +
                      " attention has q/k/v biases)");
        }
        src.Direct(&out, layer + "self_attn." + proj + ".bias", name);
      }
    }
    norm(layer + "final_layer_norm.weight", h + "post_attention_layernorm.weight");
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
  src.CheckAllUsed(std::string("(not part of a ") + family.name + " model with this config.json" +
                   (family.qkv_bias ? ")" : "; biases would need attention_bias / mlp_bias)"));
  return out;
}

}  // namespace

MappedCheckpoint MapLlama(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapLlamaFamily(ckpt, options, kLlama);
}

MappedCheckpoint MapQwen2(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapLlamaFamily(ckpt, options, kQwen2);
}

MappedCheckpoint MapMistral(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapLlamaFamily(ckpt, options, kMistral);
}

MappedCheckpoint MapGemma(const Checkpoint& ckpt, const ArchitectureOptions& options) {
  return MapLlamaFamily(ckpt, options, kGemma);
}

}  // namespace tern::convert::arch
