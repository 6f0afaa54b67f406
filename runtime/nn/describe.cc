#include "runtime/nn/describe.h"

#include <cstdarg>
#include <cstdio>

namespace tern {

void FormatName(char* buf, int size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, static_cast<size_t>(size), format, args);
  va_end(args);
}

Status DescribeNorm(const ModelConfig& c, const char* prefix, WeightVisitor& v, NormWeights* w) {
  char name[kNameSize];
  FormatName(name, kNameSize, "%s.weight", prefix);
  TERN_RETURN_IF_ERROR(v.Vector(name, c.d_model, true, &w->gamma));
  FormatName(name, kNameSize, "%s.bias", prefix);
  return v.Vector(name, c.d_model, c.norm_kind != ref::NormKind::kRMSNorm, &w->beta);
}

Status DescribeAttention(const ModelConfig& c, const char* prefix, bool self_attention,
                         const LinearCall& q_call, const LinearCall& kv_call, WeightVisitor& v,
                         AttentionWeights* w) {
  const int64_t d = c.d_model, d_kv = c.d_kv();
  char name[kNameSize];
  FormatName(name, kNameSize, "%s.q_proj", prefix);
  TERN_RETURN_IF_ERROR(v.Linear(name, d, d, q_call, false, &w->q));
  FormatName(name, kNameSize, "%s.k_proj", prefix);
  TERN_RETURN_IF_ERROR(v.Linear(name, d_kv, d, kv_call, false, &w->k));
  FormatName(name, kNameSize, "%s.v_proj", prefix);
  TERN_RETURN_IF_ERROR(v.Linear(name, d_kv, d, kv_call, false, &w->v));
  FormatName(name, kNameSize, "%s.out_proj", prefix);
  const LinearCall out_call{q_call.rows, d, d};
  TERN_RETURN_IF_ERROR(v.Linear(name, d, d, out_call, false, &w->out));
  w->relative_key = w->relative_value = nullptr;
  if (self_attention && c.position == PositionKind::kRelative &&
      c.relative_attention == RelativeAttention::kShaw) {
    const int64_t rows = 2 * static_cast<int64_t>(c.relative_max_distance) + 1;
    FormatName(name, kNameSize, "%s.relative_key.weight", prefix);
    TERN_RETURN_IF_ERROR(v.Table(name, rows, c.d_head(), &w->relative_key));
    FormatName(name, kNameSize, "%s.relative_value.weight", prefix);
    TERN_RETURN_IF_ERROR(v.Table(name, rows, c.d_head(), &w->relative_value));
  }
  return Status::Ok();
}

Status DescribeFeedForward(const ModelConfig& c, const char* layer, int64_t rows, WeightVisitor& v,
                           FeedForwardWeights* w) {
  const int64_t d = c.d_model, ff = c.d_ff;
  char name[kNameSize];
  FormatName(name, kNameSize, "%s.fc1", layer);
  TERN_RETURN_IF_ERROR(v.Linear(name, ff, d, LinearCall{rows, d, ff}, false, &w->fc1));
  FormatName(name, kNameSize, "%s.fc2", layer);
  TERN_RETURN_IF_ERROR(v.Linear(name, d, ff, LinearCall{rows, ff, d}, false, &w->fc2));
  if (c.activation != ref::Activation::kSwiGLU) return Status::Ok();
  FormatName(name, kNameSize, "%s.fc3", layer);  // SwiGLU's up projection (LLaMA's W3)
  return v.Linear(name, ff, d, LinearCall{rows, d, ff}, false, &w->fc3);
}

Status DescribeLayer(const ModelConfig& c, const char* stack, int index, const LayerCalls& calls,
                     WeightVisitor& v, LayerWeights* w, CrossAttentionWeights* cross) {
  const int64_t d = c.d_model;
  char layer[kNameSize], name[kNameSize];
  FormatName(layer, kNameSize, "%s.layers.%d", stack, index);
  const LinearCall q_call{calls.rows, d, d};
  FormatName(name, kNameSize, "%s.self_attn", layer);
  TERN_RETURN_IF_ERROR(DescribeAttention(
      c, name, true, q_call, LinearCall{calls.kv_rows, d, calls.kv_ldy}, v, &w->self_attn));
  FormatName(name, kNameSize, "%s.self_attn_layer_norm", layer);
  TERN_RETURN_IF_ERROR(DescribeNorm(c, name, v, &w->self_attn_norm));
  if (cross != nullptr) {
    FormatName(name, kNameSize, "%s.encoder_attn", layer);
    TERN_RETURN_IF_ERROR(DescribeAttention(
        c, name, false, q_call, LinearCall{calls.src_rows, d, c.d_kv()}, v, &cross->attn));
    FormatName(name, kNameSize, "%s.encoder_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(DescribeNorm(c, name, v, &cross->norm));
  }
  TERN_RETURN_IF_ERROR(DescribeFeedForward(c, layer, calls.rows, v, &w->ffn));
  FormatName(name, kNameSize, "%s.final_layer_norm", layer);
  return DescribeNorm(c, name, v, &w->ffn_norm);
}

}  // namespace tern
