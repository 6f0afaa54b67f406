#include "converter/architectures/encoder_decoder_layout.h"

namespace tern::convert {

namespace {

void AddLinear(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t rows, int64_t cols) {
  out->push_back({prefix + ".weight", {rows, cols}, TensorRole::kMatrix, true});
  out->push_back({prefix + ".bias", {rows}, TensorRole::kVector, false});
}

void AddNorm(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t d, bool has_bias) {
  out->push_back({prefix + ".weight", {d}, TensorRole::kVector, true});
  out->push_back({prefix + ".bias", {d}, TensorRole::kVector, has_bias});
}

void AddAttention(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t d) {
  for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) AddLinear(out, prefix + "." + p, d, d);
}

}  // namespace

std::vector<ExpectedTensor> EncoderDecoderLayout(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.d_model;
  const bool bias = c.norm_kind != ref::NormKind::kRMSNorm;
  out.push_back({"encoder.embed_tokens.weight", {c.src_vocab_size, d}, TensorRole::kEmbedding, true});
  if (!c.shared_embeddings) {
    out.push_back({"decoder.embed_tokens.weight", {c.tgt_vocab_size, d}, TensorRole::kEmbedding, true});
  }
  if (!c.tied_output) {
    out.push_back({"output_projection.weight", {c.tgt_vocab_size, d}, TensorRole::kMatrix, true});
  }
  out.push_back({"output_projection.bias", {c.tgt_vocab_size}, TensorRole::kVector, false});
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    AddAttention(&out, layer + ".self_attn", d);
    AddNorm(&out, layer + ".self_attn_layer_norm", d, bias);
    AddLinear(&out, layer + ".fc1", c.d_ff, d);
    AddLinear(&out, layer + ".fc2", d, c.d_ff);
    AddNorm(&out, layer + ".final_layer_norm", d, bias);
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    AddAttention(&out, layer + ".self_attn", d);
    AddNorm(&out, layer + ".self_attn_layer_norm", d, bias);
    AddAttention(&out, layer + ".encoder_attn", d);
    AddNorm(&out, layer + ".encoder_attn_layer_norm", d, bias);
    AddLinear(&out, layer + ".fc1", c.d_ff, d);
    AddLinear(&out, layer + ".fc2", d, c.d_ff);
    AddNorm(&out, layer + ".final_layer_norm", d, bias);
  }
  if (c.has_final_norm()) {
    AddNorm(&out, "encoder.layer_norm", d, bias);
    AddNorm(&out, "decoder.layer_norm", d, bias);
  }
  if (c.architecture == Architecture::kUniversal && c.act_threshold > 0.0f) {
    // Universal Transformer ACT halting units, p = sigmoid(W s + b): kept f32 (role kVector)
    // since quantizing them could flip halting decisions; d + 1 numbers per stack.
    for (const char* stack : {"encoder", "decoder"}) {
      out.push_back({std::string(stack) + ".halting.weight", {1, d}, TensorRole::kVector, true});
      out.push_back({std::string(stack) + ".halting.bias", {1}, TensorRole::kVector, true});
    }
  }
  return out;
}

}  // namespace tern::convert
