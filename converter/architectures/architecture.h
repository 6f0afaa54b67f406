// Architecture name maps: a checkpoint's own tensor names and config -> tern's canonical
// tensors (docs/CONVENTIONS.md) and ModelConfig. One function per layout:
//
//   tern            canonical names already (the project's own checkpoints, safetensors/npz/pt);
//                   config from --config, the safetensors metadata "config" or config.json
//   marian          Hugging Face MarianMT (OPUS-MT): model.encoder.layers.N.self_attn.q_proj, ...;
//                   config from the HF config.json
//   marian_npz     Marian C++'s own model.npz: encoder_l1_self_Wq, ... ([in, out], transposed
//                   here), config from the embedded special:model.yml; the zero start vector
//                   becomes an appended start token
//   nn_transformer  torch.nn.Transformer (in_proj_weight, linear1/2, norm1/2/3, encoder.norm) plus
//                   a JSON name map (--map) for the embeddings, generator and position buffers
//   annotated       The Annotated Transformer's make_model state_dict (linears.0..3,
//                   feed_forward.w_1/w_2, sublayer.N.norm.a_2/b_2, src_embed.0.lut, generator.proj)
//   bart            Hugging Face BART: model.shared, learned positions with offset 2,
//                   layernorm_embedding, post-LN layers, final_logits_bias; its config.json
//   mbart           Hugging Face mBART / mBART-50: the BART layout with pre-LN layers and each
//                   stack's final layer_norm; mBART-50's language codes (language_codes.h),
//                   mBART cc25's text path refused
//   gpt2            Hugging Face GPT-2 (decoder-only): transformer.wte/wpe, h.N.attn.c_attn
//                   (Conv1D, q/k/v fused), mlp.c_fc/c_proj, ln_1/ln_2/ln_f; its config.json
//   llama           Hugging Face LLaMA (decoder-only, rotary, RMSNorm, SwiGLU):
//                   model.embed_tokens, model.layers.N.self_attn.{q,k,v,o}_proj,
//                   mlp.{gate,up,down}_proj, input_/post_attention_layernorm, model.norm, lm_head;
//                   LLaMA 1/2/3, TinyLlama, SmolLM (grouped-query attention, rope_scaling linear
//                   and llama3, tied or untied)
//   qwen2           Hugging Face Qwen2 / Qwen2.5: the LLaMA layout with q/k/v biases
//   mistral         Hugging Face Mistral: the LLaMA layout with sliding-window attention
//   gemma           Hugging Face Gemma (1): the LLaMA layout with GeGLU, sqrt(d) embedding scale,
//                   (1 + w) RMSNorm gains, tied output, head_dim
//   t5              Hugging Face T5 (v1.0, v1.1, Flan-T5): shared,
//   {encoder,decoder}.block.N.layer.M
//                   (SelfAttention / EncDecAttention q,k,v,o, DenseReluDense wi or wi_0/wi_1, wo,
//                   layer_norm), relative_attention_bias in block 0, final_layer_norm, lm_head
//   mt5             Hugging Face mT5: the T5 layout (model_type mt5)
//   m2m100          Hugging Face M2M100 / NLLB-200 (dense): the Marian names under model. with
//   nllb            pre-LN final norms model.{encoder,decoder}.layer_norm, one shared table,
//                   fairseq sinusoids counted from pad + 1 (sinusoid_layout fairseq); the
//                   target language is a forced first token per call; its config.json
//   fairseq         fairseq transformer training checkpoints (checkpoint_best.pt): weights under
//                   "model" with fairseq's names (the Hugging Face BART names without "model."),
//                   options from args (Namespace) or cfg["model"], learned positions from
//                   pad + 1 or fairseq sinusoids, dict.SRC/TGT.txt sizes checked
//   opennmt         OpenNMT-py 3.x training checkpoints (model, generator, vocab, opt):
//                   encoder.transformer.N.self_attn.linear_{query,keys,values}, final_linear,
//                   feed_forward.w_1/w_2, decoder.transformer_layers.N.context_attn,
//                   layer_norm_1/2, emb_luts.0, pe.pe; options from opt, token ids from vocab
//   auto            one of the Hugging Face maps, from config.json's model_type (else its
//                   architectures' class name)
//
// Every source tensor must be used, verified-and-dropped (position tables, tied copies) or
// skipped by the user; anything else is an "unexpected tensor" error naming it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "converter/host_tensor.h"
#include "converter/readers/checkpoint.h"
#include "runtime/model/config.h"

namespace tern::convert {

struct ArchitectureOptions {
  std::string arch = "tern";
  std::string checkpoint;      // path, for locating config.json
  std::string config;          // --config path (HF config.json for marian; tern config otherwise)
  std::string map;             // --map path (nn_transformer)
  std::string overrides_json;  // --set key=value pairs as a JSON object text ("" = none)
  std::vector<std::string> skip_prefixes;
  // Accept a stored sinusoidal table that differs from what the runtime computes (drop it with a
  // warning instead of failing).
  bool ignore_position_mismatch = false;
};

// One canonical tensor: where it comes from and how to produce its values.
struct MappedTensor {
  std::string source;                // source name(s), for messages
  std::function<HostTensor()> load;  // values with the canonical name, in the source's shape
};

struct MappedCheckpoint {
  std::string arch;  // the map that ran (--arch auto: the one config.json named)
  ModelConfig config;
  std::string config_label;                     // where the config came from, for messages
  std::map<std::string, MappedTensor> tensors;  // canonical name -> source
  // Canonical -> source name for every tensor the layout may need (present or not), so errors
  // about a missing tensor name what the checkpoint should have held.
  std::map<std::string, std::string> source_names;
  std::vector<std::string> notes;  // what was verified and dropped, tied, inferred
  // A multilingual model's language codes -> tokens (m2m100, nllb, mbart), for the file's table.
  std::vector<std::pair<std::string, int32_t>> languages;
  // fairseq: the dict.txt both sides share, through which a sentencepiece.bpe.model beside the
  // checkpoint is numbered (VocabularyRule::kFairseqDict); empty: no such tokenizer is taken.
  std::string vocabulary_dict;
  // Non-empty: why a SentencePiece tokenizer is refused for this checkpoint (mBART cc25's
  // language-code convention, which tern translate does not apply); ids still convert.
  std::string text_refusal;
};

// Maps `ckpt` per options.arch. Throws convert::Error naming the tensor/field at fault.
MappedCheckpoint MapCheckpoint(const Checkpoint& ckpt, const ArchitectureOptions& options);

// The --arch that config.json (options.config, else beside the checkpoint) names; throws
// naming its model_type when no map knows it.
std::string DetectArchitecture(const ArchitectureOptions& options);

// What `arch` reads of a torch.save training checkpoint when --state-key is not given: fairseq's
// weights are under "model"; OpenNMT-py's under "model" with the output layer under "generator".
CheckpointOptions DefaultCheckpointOptions(const std::string& arch);

// The names --arch accepts.
const std::vector<std::string>& ArchitectureNames();

}  // namespace tern::convert
