#include "converter/architectures/encoder_decoder_layout.h"

namespace tern::convert {

namespace {

void AddLinear(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t rows,
               int64_t cols) {
  out->push_back({prefix + ".weight", {rows, cols}, TensorRole::kMatrix, true});
  out->push_back({prefix + ".bias", {rows}, TensorRole::kVector, false});
}

void AddNorm(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t d,
             bool has_bias) {
  out->push_back({prefix + ".weight", {d}, TensorRole::kVector, true});
  out->push_back({prefix + ".bias", {d}, TensorRole::kVector, has_bias});
}

void AddAttention(std::vector<ExpectedTensor>* out, const std::string& prefix, int64_t d) {
  for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"})
    AddLinear(out, prefix + "." + p, d, d);
}

// fc1 (W1; SwiGLU's gate), fc2 (W2) and, for SwiGLU, fc3 (W3, the up projection).
void AddFeedForward(std::vector<ExpectedTensor>* out, const std::string& layer,
                    const ModelConfig& c) {
  AddLinear(out, layer + ".fc1", c.d_ff, c.d_model);
  AddLinear(out, layer + ".fc2", c.d_model, c.d_ff);
  if (c.activation == ref::Activation::kSwiGLU) AddLinear(out, layer + ".fc3", c.d_ff, c.d_model);
}

// Shaw et al.'s a^K and a^V of one self-attention: [2k+1, d_head], kept f32.
void AddShaw(std::vector<ExpectedTensor>* out, const std::string& attention, const ModelConfig& c) {
  if (c.position != PositionKind::kRelative || c.relative_attention != RelativeAttention::kShaw)
    return;
  const int64_t rows = 2 * static_cast<int64_t>(c.relative_max_distance) + 1;
  out->push_back(
      {attention + ".relative_key.weight", {rows, c.d_head()}, TensorRole::kVector, true});
  out->push_back(
      {attention + ".relative_value.weight", {rows, c.d_head()}, TensorRole::kVector, true});
}

}  // namespace

std::vector<ExpectedTensor> EncoderDecoderLayout(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t d = c.d_model;
  const bool bias = c.norm_kind != ref::NormKind::kRMSNorm;
  out.push_back(
      {"encoder.embed_tokens.weight", {c.src_vocab_size, d}, TensorRole::kEmbedding, true});
  if (!c.shared_embeddings) {
    out.push_back(
        {"decoder.embed_tokens.weight", {c.tgt_vocab_size, d}, TensorRole::kEmbedding, true});
  }
  if (!c.tied_output) {
    out.push_back({"output_projection.weight", {c.tgt_vocab_size, d}, TensorRole::kMatrix, true});
  }
  out.push_back({"output_projection.bias", {c.tgt_vocab_size}, TensorRole::kVector, false});
  if (c.position == PositionKind::kLearned) {
    // Learned absolute positions: rows are looked up like token embeddings (int8 rows allowed).
    for (const char* stack : {"encoder", "decoder"}) {
      out.push_back({std::string(stack) + ".embed_positions.weight",
                     {c.max_positions, d},
                     TensorRole::kEmbedding,
                     true});
    }
  }
  if (c.position == PositionKind::kRelative && c.relative_attention == RelativeAttention::kT5Bias) {
    // T5: one [buckets, heads] bias table per stack, shared by its layers; kept f32.
    for (const char* stack : {"encoder", "decoder"}) {
      out.push_back({std::string(stack) + ".relative_attention_bias.weight",
                     {c.relative_buckets, c.heads},
                     TensorRole::kVector,
                     true});
    }
  }
  for (int i = 0; i < c.encoder_layers; ++i) {
    const std::string layer = "encoder.layers." + std::to_string(i);
    AddAttention(&out, layer + ".self_attn", d);
    AddShaw(&out, layer + ".self_attn", c);
    AddNorm(&out, layer + ".self_attn_layer_norm", d, bias);
    AddFeedForward(&out, layer, c);
    AddNorm(&out, layer + ".final_layer_norm", d, bias);
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    const std::string layer = "decoder.layers." + std::to_string(i);
    AddAttention(&out, layer + ".self_attn", d);
    AddShaw(&out, layer + ".self_attn", c);
    AddNorm(&out, layer + ".self_attn_layer_norm", d, bias);
    AddAttention(&out, layer + ".encoder_attn", d);
    AddNorm(&out, layer + ".encoder_attn_layer_norm", d, bias);
    AddFeedForward(&out, layer, c);
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
