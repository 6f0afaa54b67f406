// The converter's expected tensors are the runtime's own description of the model
// (runtime/models/model_weights.h: DescribeModel), collected instead of resolved: one list of
// canonical names and shapes for the converter, the loader and the backends.
#include <string>

#include "converter/architectures/decoder_only_layout.h"
#include "converter/error.h"
#include "runtime/models/model_weights.h"

namespace tern::convert {

namespace {

class Collect final : public WeightVisitor {
 public:
  explicit Collect(std::vector<ExpectedTensor>* out) : out_(out) {}

  Status Matrix(const char* name, int64_t rows, int64_t cols, WeightView*) override {
    // Rows looked up like token embeddings (embeddings, learned positions): int8 rows allowed.
    out_->push_back({name, {rows, cols}, TensorRole::kEmbedding, true});
    return Status::Ok();
  }
  Status Linear(const char* prefix, int64_t out, int64_t in, const LinearCall&, bool tied,
                LinearWeights*) override {
    const std::string p(prefix);
    if (!tied) out_->push_back({p + ".weight", {out, in}, TensorRole::kMatrix, true});
    out_->push_back({p + ".bias", {out}, TensorRole::kVector, false});
    return Status::Ok();
  }
  Status Vector(const char* name, int64_t size, bool required, const float**) override {
    out_->push_back({name, {size}, TensorRole::kVector, required});
    return Status::Ok();
  }
  // Relative-position tables and halting units stay f32 (role kVector): quantizing them could
  // move attention or flip halting decisions, for a few numbers.
  Status Table(const char* name, int64_t rows, int64_t cols, const float**) override {
    out_->push_back({name, {rows, cols}, TensorRole::kVector, true});
    return Status::Ok();
  }

 private:
  std::vector<ExpectedTensor>* out_;
};

}  // namespace

std::vector<ExpectedTensor> ModelLayout(const ModelConfig& c) {
  if (c.architecture != Architecture::kEncoderDecoder &&
      c.architecture != Architecture::kDecoderOnly && c.architecture != Architecture::kUniversal) {
    throw Error("unknown architecture");
  }
  std::vector<ExpectedTensor> out;
  Collect collect(&out);
  ModelWeights weights;
  const Status s = DescribeModel(c, ModelCalls(), collect, &weights, ModelLayers());
  if (!s.ok()) throw Error(s.message());
  return out;
}

std::vector<ExpectedTensor> EncoderDecoderLayout(const ModelConfig& c) { return ModelLayout(c); }
std::vector<ExpectedTensor> DecoderOnlyLayout(const ModelConfig& c) { return ModelLayout(c); }

}  // namespace tern::convert
