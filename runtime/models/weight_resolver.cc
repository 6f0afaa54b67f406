#include "runtime/models/weight_resolver.h"

#include <cstdarg>
#include <cstdio>

namespace tern {

void FormatName(char* buf, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, size, format, args);
  va_end(args);
}

const char* WeightResolver::Name(const char* prefix, const char* leaf) {
  FormatName(name_, sizeof name_, "%s.%s", prefix, leaf);
  return name_;
}

Status WeightResolver::Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out) {
  TensorInfo info;
  const int64_t dims[2] = {rows, cols};
  TERN_RETURN_IF_ERROR(model_.Require(name, 2, dims, &info));
  if (info.dtype == DType::kI32) {
    return Status::Error(StatusCode::kDTypeMismatch,
                         "tensor \"%s\" is i32; weights must be f32, f16, i8 or i4", name);
  }
  *out = info.AsWeight();
  return Status::Ok();
}

Status WeightResolver::Vector(const char* name, int64_t size, bool required, const float** out) {
  if (!required && !model_.Find(name, nullptr)) {
    *out = nullptr;
    return Status::Ok();
  }
  TensorInfo info;
  TERN_RETURN_IF_ERROR(model_.Require(name, 1, &size, &info));
  if (info.dtype != DType::kF32) {
    return Status::Error(StatusCode::kDTypeMismatch,
                         "tensor \"%s\" is %s; biases and norms must be f32", name,
                         DTypeName(info.dtype));
  }
  *out = static_cast<const float*>(info.data);
  return Status::Ok();
}

Status WeightResolver::Table(const char* name, int64_t rows, int64_t cols, const float** out) {
  TensorInfo info;
  const int64_t dims[2] = {rows, cols};
  TERN_RETURN_IF_ERROR(model_.Require(name, 2, dims, &info));
  if (info.dtype != DType::kF32) {
    return Status::Error(StatusCode::kDTypeMismatch,
                         "tensor \"%s\" is %s; relative-position tables must be f32", name,
                         DTypeName(info.dtype));
  }
  *out = static_cast<const float*>(info.data);
  return Status::Ok();
}

Status WeightResolver::Linear(const char* prefix, int64_t out_features, int64_t in_features,
                              LinearWeights* w) {
  TERN_RETURN_IF_ERROR(Matrix(Name(prefix, "weight"), out_features, in_features, &w->weight));
  return Vector(Name(prefix, "bias"), out_features, false, &w->bias);
}

Status WeightResolver::Norm(const char* prefix, NormWeights* n) {
  TERN_RETURN_IF_ERROR(Vector(Name(prefix, "weight"), d_, true, &n->gamma));
  const bool has_beta = config().norm_kind != ref::NormKind::kRMSNorm;
  return Vector(Name(prefix, "bias"), d_, has_beta, &n->beta);
}

Status WeightResolver::Attention(const char* prefix, bool self_attention, AttentionWeights* a) {
  char buf[kNameSize];
  const char* parts[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
  LinearWeights* targets[] = {&a->q, &a->k, &a->v, &a->out};
  for (int i = 0; i < 4; ++i) {
    FormatName(buf, sizeof buf, "%s.%s", prefix, parts[i]);
    TERN_RETURN_IF_ERROR(Linear(buf, d_, d_, targets[i]));
  }
  const ModelConfig& c = config();
  if (self_attention && c.position == PositionKind::kRelative &&
      c.relative_attention == RelativeAttention::kShaw) {
    const int64_t rows = 2 * static_cast<int64_t>(c.relative_max_distance) + 1;
    FormatName(buf, sizeof buf, "%s.relative_key.weight", prefix);
    TERN_RETURN_IF_ERROR(Table(buf, rows, c.d_head(), &a->relative_key));
    FormatName(buf, sizeof buf, "%s.relative_value.weight", prefix);
    TERN_RETURN_IF_ERROR(Table(buf, rows, c.d_head(), &a->relative_value));
  }
  return Status::Ok();
}

Status WeightResolver::FeedForward(const char* layer, FeedForwardWeights* f) {
  char buf[kNameSize];
  const int64_t ff = config().d_ff;
  FormatName(buf, sizeof buf, "%s.fc1", layer);
  TERN_RETURN_IF_ERROR(Linear(buf, ff, d_, &f->fc1));
  FormatName(buf, sizeof buf, "%s.fc2", layer);
  TERN_RETURN_IF_ERROR(Linear(buf, d_, ff, &f->fc2));
  if (config().activation != ref::Activation::kSwiGLU) return Status::Ok();
  FormatName(buf, sizeof buf, "%s.fc3", layer);  // SwiGLU's up projection (LLaMA's W3)
  return Linear(buf, ff, d_, &f->fc3);
}

}  // namespace tern
