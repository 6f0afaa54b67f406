#include "converter/architectures/decoder_only_layout.h"

#include <string>

#include "converter/error.h"

namespace tern::convert {

std::vector<ExpectedTensor> DecoderOnlyLayout(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.d_model;
  const bool bias = c.norm_kind != ref::NormKind::kRMSNorm;
  auto linear = [&](const std::string& prefix, int64_t rows, int64_t cols) {
    out.push_back({prefix + ".weight", {rows, cols}, TensorRole::kMatrix, true});
    out.push_back({prefix + ".bias", {rows}, TensorRole::kVector, false});
  };
  auto norm = [&](const std::string& prefix) {
    out.push_back({prefix + ".weight", {d}, TensorRole::kVector, true});
    out.push_back({prefix + ".bias", {d}, TensorRole::kVector, bias});
  };
  out.push_back(
      {"decoder.embed_tokens.weight", {c.tgt_vocab_size, d}, TensorRole::kEmbedding, true});
  if (c.position == PositionKind::kLearned) {
    out.push_back(
        {"decoder.embed_positions.weight", {c.max_positions, d}, TensorRole::kEmbedding, true});
  }
  if (!c.tied_output) {
    out.push_back({"output_projection.weight", {c.tgt_vocab_size, d}, TensorRole::kMatrix, true});
  }
  out.push_back({"output_projection.bias", {c.tgt_vocab_size}, TensorRole::kVector, false});
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"})
      linear(layer + ".self_attn." + p, d, d);
    norm(layer + ".self_attn_layer_norm");
    linear(layer + ".fc1", c.d_ff, d);
    linear(layer + ".fc2", d, c.d_ff);
    if (c.activation == ref::Activation::kSwiGLU)
      linear(layer + ".fc3", c.d_ff, d);  // LLaMA's up_proj
    norm(layer + ".final_layer_norm");
  }
  if (c.has_final_norm()) norm("decoder.layer_norm");
  return out;
}

std::vector<ExpectedTensor> ModelLayout(const ModelConfig& c) {
  switch (c.architecture) {
    case Architecture::kEncoderDecoder:
      return EncoderDecoderLayout(c);
    case Architecture::kDecoderOnly:
      return DecoderOnlyLayout(c);
    case Architecture::kUniversal:  // one block per stack: checked by the converter
      return EncoderDecoderLayout(c);
  }
  throw Error("unknown architecture");
}

}  // namespace tern::convert
