#include "runtime/nn/describe.h"

#include <cstdarg>
#include <cstdio>

namespace tern {

const char* TensorName::Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf_, sizeof buf_, format, args);
  va_end(args);
  return buf_;
}

Status DescribeNorm(const ModelConfig& c, const char* prefix, WeightVisitor& v, NormWeights* w) {
  TensorName name;
  TERN_RETURN_IF_ERROR(v.Vector(name(prefix, "weight"), c.d_model, true, &w->gamma));
  const bool bias = c.norm_kind != ref::NormKind::kRMSNorm;
  return v.Vector(name(prefix, "bias"), c.d_model, bias, &w->beta);
}

Status DescribeAttention(const ModelConfig& c, const char* prefix, bool self_attention,
                         const LinearCall& q_call, const LinearCall& kv_call, WeightVisitor& v,
                         AttentionWeights* w) {
  // d_q = heads * d_head: d_model unless head_dim sets another head size (Gemma, T5).
  const int64_t d = c.d_model, d_q = c.d_q(), d_kv = c.d_kv();
  const LinearCall out_call{q_call.rows, d_q, d};
  TensorName name;
  TERN_RETURN_IF_ERROR(v.Linear(name(prefix, "q_proj"), d_q, d, q_call, false, &w->q));
  TERN_RETURN_IF_ERROR(v.Linear(name(prefix, "k_proj"), d_kv, d, kv_call, false, &w->k));
  TERN_RETURN_IF_ERROR(v.Linear(name(prefix, "v_proj"), d_kv, d, kv_call, false, &w->v));
  TERN_RETURN_IF_ERROR(v.Linear(name(prefix, "out_proj"), d, d_q, out_call, false, &w->out));
  w->relative_key = w->relative_value = nullptr;
  if (self_attention && c.position == PositionKind::kRelative &&
      c.relative_attention == RelativeAttention::kShaw) {
    const int64_t rows = 2 * static_cast<int64_t>(c.relative_max_distance) + 1;
    TERN_RETURN_IF_ERROR(
        v.Table(name(prefix, "relative_key.weight"), rows, c.d_head(), &w->relative_key));
    TERN_RETURN_IF_ERROR(
        v.Table(name(prefix, "relative_value.weight"), rows, c.d_head(), &w->relative_value));
  }
  return Status::Ok();
}

Status DescribeFeedForward(const ModelConfig& c, const char* layer, int64_t rows, WeightVisitor& v,
                           FeedForwardWeights* w) {
  const int64_t d = c.d_model, ff = c.d_ff;
  const LinearCall up{rows, d, ff}, down{rows, ff, d};
  TensorName name;
  TERN_RETURN_IF_ERROR(v.Linear(name(layer, "fc1"), ff, d, up, false, &w->fc1));
  TERN_RETURN_IF_ERROR(v.Linear(name(layer, "fc2"), d, ff, down, false, &w->fc2));
  if (!ref::IsGated(c.activation)) return Status::Ok();
  return v.Linear(name(layer, "fc3"), ff, d, up, false, &w->fc3);  // SwiGLU's / GeGLU's W3
}

Status DescribeLayer(const ModelConfig& c, const char* stack, int index, const LayerCalls& calls,
                     WeightVisitor& v, LayerWeights* w, CrossAttentionWeights* cross) {
  const int64_t d = c.d_model;
  TensorName layer_name, name;
  const char* layer = layer_name.Format("%s.layers.%d", stack, index);
  const LinearCall q{calls.rows, d, c.d_q()}, self_kv{calls.kv_rows, d, calls.kv_ldy},
      cross_kv{calls.src_rows, d, c.d_kv()};
  TERN_RETURN_IF_ERROR(
      DescribeAttention(c, name(layer, "self_attn"), true, q, self_kv, v, &w->self_attn));
  TERN_RETURN_IF_ERROR(DescribeNorm(c, name(layer, "self_attn_layer_norm"), v, &w->self_attn_norm));
  if (cross != nullptr) {
    TERN_RETURN_IF_ERROR(
        DescribeAttention(c, name(layer, "encoder_attn"), false, q, cross_kv, v, &cross->attn));
    TERN_RETURN_IF_ERROR(DescribeNorm(c, name(layer, "encoder_attn_layer_norm"), v, &cross->norm));
  }
  TERN_RETURN_IF_ERROR(DescribeFeedForward(c, layer, calls.rows, v, &w->ffn));
  return DescribeNorm(c, name(layer, "final_layer_norm"), v, &w->ffn_norm);
}

}  // namespace tern
