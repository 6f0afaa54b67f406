#include "converter/architectures/hf_seq2seq.h"

#include "converter/architectures/hf_config.h"
#include "converter/error.h"

namespace tern::convert::arch {

void ReadHfSeq2SeqSizes(const HfConfig& hf, const std::string& label, ModelConfig* c) {
  c->d_model = hf.Int("d_model", false, 1024);
  const int32_t enc_heads = hf.Int("encoder_attention_heads", false, 16);
  const int32_t dec_heads = hf.Int("decoder_attention_heads", false, 16);
  if (enc_heads != dec_heads) {
    throw Error(label + ": encoder_attention_heads " + std::to_string(enc_heads) +
                " != decoder_attention_heads " + std::to_string(dec_heads) +
                "; the runtime uses one head count");
  }
  c->heads = enc_heads;
  c->encoder_layers = hf.Int("encoder_layers", false, 12);
  c->decoder_layers = hf.Int("decoder_layers", false, 12);
  const int32_t enc_ffn = hf.Int("encoder_ffn_dim", false, 4096);
  const int32_t dec_ffn = hf.Int("decoder_ffn_dim", false, 4096);
  if (enc_ffn != dec_ffn) {
    throw Error(label + ": encoder_ffn_dim " + std::to_string(enc_ffn) + " != decoder_ffn_dim " +
                std::to_string(dec_ffn) + "; the runtime uses one d_ff");
  }
  c->d_ff = enc_ffn;
}

ref::Activation HfActivation(const std::string& name, const std::string& label) {
  if (name == "swish" || name == "silu") return ref::Activation::kSwish;
  if (name == "gelu") return ref::Activation::kGELU;
  if (name == "relu") return ref::Activation::kReLU;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return ref::Activation::kGELUTanh;
  throw Error(label + ": \"activation_function\" = \"" + name +
              "\" is not supported; expected swish, silu, gelu, relu or gelu_new");
}

void MapHfEmbeddings(const Checkpoint& ckpt, Sources& src, bool share, bool tie, bool logits_bias,
                     const std::string& share_why, MappedCheckpoint* out) {
  ModelConfig& c = out->config;
  const char* kShared = "model.shared.weight";
  const char* kEnc = "model.encoder.embed_tokens.weight";
  const char* kDec = "model.decoder.embed_tokens.weight";
  std::string dec_source;
  if (share) {
    std::string enc_source;
    for (const char* name : {kShared, kEnc, kDec}) {
      if (!src.Has(name)) continue;
      if (enc_source.empty()) {
        enc_source = name;
      } else if (!SameValues(ckpt, enc_source, name)) {
        throw Error(ckpt.label() + ": tensor \"" + name + "\" differs from \"" + enc_source +
                    "\" although " + share_why);
      } else {
        out->notes.push_back(std::string("dropped ") + name + ": same table as " + enc_source);
      }
      src.Use(name);
    }
    if (enc_source.empty()) enc_source = kShared;
    src.Direct(out, "encoder.embed_tokens.weight", enc_source);
    c.shared_embeddings = true;
    dec_source = enc_source;
  } else {
    src.Direct(out, "encoder.embed_tokens.weight", kEnc);
    src.Direct(out, "decoder.embed_tokens.weight", kDec);
    c.shared_embeddings = false;
    dec_source = kDec;
  }
  if (tie) {
    if (src.Has("lm_head.weight")) {
      if (src.Has(dec_source) && !SameValues(ckpt, "lm_head.weight", dec_source)) {
        throw Error(
            ckpt.label() + ": tensor \"lm_head.weight\" differs from \"" + dec_source +
            "\" although config tie_word_embeddings is true (transformers would replace it)");
      }
      src.Use("lm_head.weight");
      out->notes.push_back("dropped lm_head.weight: tied to " + dec_source);
    }
    c.tied_output = true;
  } else {
    src.Direct(out, "output_projection.weight", "lm_head.weight");
    c.tied_output = false;
  }
  if (logits_bias) src.Squeeze(out, "output_projection.bias", "final_logits_bias");
}

void OffsetPositions(Sources& src, MappedCheckpoint* out, const std::string& canonical,
                     const std::string& source, int64_t stored_rows, int64_t positions, int64_t d,
                     const std::string& why) {
  const std::string label = source + " rows [2, " + std::to_string(positions + 2) + ")";
  out->source_names[canonical] = label;
  if (!src.Has(source)) return;
  src.Use(source);
  const Checkpoint* ckpt = &src.ckpt();
  out->tensors[canonical] = MappedTensor{
      label, [ckpt, source, stored_rows, positions, d, why] {
        HostTensor full = ckpt->Float(source);
        const std::vector<int64_t> want = {stored_rows, d};
        if (full.shape != want) {
          throw Error(ckpt->at(source).where + ": tensor \"" + source + "\" has shape " +
                      full.shape_string() + ", expected [" + std::to_string(want[0]) + ", " +
                      std::to_string(d) + "] (" + why + ")");
        }
        HostTensor t;
        t.name = source;
        t.shape = {positions, d};
        const auto first = full.values.begin() + kPositionOffset * d;
        t.values.assign(first, first + positions * d);
        return t;
      }};
}

}  // namespace tern::convert::arch
