// Parts the Hugging Face encoder-decoder maps share (marian.cc, m2m100.cc): the activation
// names and the token embeddings with their shared / tied copies.
#include "converter/architectures/architecture_util.h"
#include "converter/error.h"

namespace tern::convert::arch {

ref::Activation HfActivation(const std::string& name, const std::string& label) {
  if (name == "swish" || name == "silu") return ref::Activation::kSwish;
  if (name == "gelu") return ref::Activation::kGELU;
  if (name == "relu") return ref::Activation::kReLU;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast")
    return ref::Activation::kGELUTanh;
  throw Error(label + ": \"activation_function\" = \"" + name +
              "\" is not supported; expected swish, silu, gelu, relu or gelu_new");
}

void MapHfTokenEmbeddings(const Checkpoint& ckpt, Sources* src, bool share, bool tie,
                          const std::string& share_key, MappedCheckpoint* out) {
  // Token embeddings: model.shared and the encoder/decoder copies must agree when shared.
  const char* kShared = "model.shared.weight";
  const char* kEnc = "model.encoder.embed_tokens.weight";
  const char* kDec = "model.decoder.embed_tokens.weight";
  std::string enc_source, dec_source;
  if (share) {
    for (const char* name : {kShared, kEnc, kDec}) {
      if (!src->Has(name)) continue;
      if (enc_source.empty()) {
        enc_source = name;
      } else if (!SameValues(ckpt, enc_source, name)) {
        throw Error(ckpt.label() + ": tensor \"" + name + "\" differs from \"" + enc_source +
                    "\" although " + share_key);
      } else {
        out->notes.push_back(std::string("dropped ") + name + ": same table as " + enc_source);
      }
      src->Use(name);
    }
    if (enc_source.empty()) enc_source = kShared;
    src->Direct(out, "encoder.embed_tokens.weight", enc_source);
    out->config.shared_embeddings = true;
    dec_source = enc_source;
  } else {
    src->Direct(out, "encoder.embed_tokens.weight", kEnc);
    src->Direct(out, "decoder.embed_tokens.weight", kDec);
    dec_source = kDec;
    out->config.shared_embeddings = false;
  }
  // Output projection: lm_head, tied unless tie_word_embeddings is false.
  if (tie) {
    if (src->Has("lm_head.weight")) {
      if (src->Has(dec_source) && !SameValues(ckpt, "lm_head.weight", dec_source)) {
        throw Error(
            ckpt.label() + ": tensor \"lm_head.weight\" differs from \"" + dec_source +
            "\" although config tie_word_embeddings is true (transformers would replace it)");
      }
      src->Use("lm_head.weight");
      out->notes.push_back("dropped lm_head.weight: tied to " + dec_source);
    }
    out->config.tied_output = true;
  } else {
    src->Direct(out, "output_projection.weight", "lm_head.weight");
    out->config.tied_output = false;
  }
}

}  // namespace tern::convert::arch
