#include "runtime/model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "runtime/model/languages.h"
#include "tern_generated.h"

namespace tern {

namespace {

constexpr uint16_t kSupportedMajor = 1;

bool ValidDType(schema::DType dtype) {
  return dtype >= schema::DType_MIN && dtype <= schema::DType_MAX;
}

// Every field as the file has it (a default where the writer left it out); enums are checked
// first, by CheckEnums.
ModelConfig ReadConfig(const schema::Config& s) {
  ModelConfig c;
#define TERN_READ(name, ...) c.name = s.name();
#define TERN_READ_ENUM(name, key, Type, SchemaEnum, def, flags, since) \
  c.name = static_cast<Type>(s.name());
  TERN_CONFIG_FIELDS(TERN_READ, TERN_READ, TERN_READ, TERN_READ_ENUM)
#undef TERN_READ
#undef TERN_READ_ENUM
  return c;
}

// The stored form of scaled rotary positions (config.h, PositionKind::kRotaryScaled) back to
// kRotary; a file whose position kind and rotary_scaling disagree is refused.
Status UnstorePosition(ModelConfig* c) {
  const bool scaled = c->rotary_scaling != ref::RotaryScaling::kNone;
  if (c->position == PositionKind::kRotaryScaled) {
    if (!scaled) {
      return Status::Error(StatusCode::kInvalidConfig,
                           "config.position = rotary_scaled needs config.rotary_scaling");
    }
    c->position = PositionKind::kRotary;
  } else if (c->position == PositionKind::kRotary && scaled) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.rotary_scaling = %d is stored with config.position = "
                         "rotary_scaled (format 1.6), not rotary",
                         static_cast<int>(c->rotary_scaling));
  }
  return Status::Ok();
}

// The stored form of a windowed decoder-only model (config.h,
// Architecture::kDecoderOnlyWindowed) back to kDecoderOnly; a file whose architecture and
// sliding_window disagree is refused.
Status UnstoreArchitecture(ModelConfig* c) {
  if (c->architecture == Architecture::kDecoderOnlyWindowed) {
    if (c->sliding_window == 0) {
      return Status::Error(StatusCode::kInvalidConfig,
                           "config.architecture = decoder_only_windowed needs "
                           "config.sliding_window");
    }
    c->architecture = Architecture::kDecoderOnly;
  } else if (c->architecture == Architecture::kDecoderOnly && c->sliding_window != 0) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.sliding_window = %d is stored with config.architecture = "
                         "decoder_only_windowed (format 1.7), not decoder_only",
                         c->sliding_window);
  }
  return Status::Ok();
}

// The stored form of a model with an embedding LayerNorm (config.h,
// NormPlacement::kPostEmbeddingNorm / kPreEmbeddingNorm) back to kPost / kPre; a file whose
// norm placement and layernorm_embedding disagree is refused.
Status UnstoreNormPlacement(ModelConfig* c) {
  const bool stored = c->norm_placement == NormPlacement::kPostEmbeddingNorm ||
                      c->norm_placement == NormPlacement::kPreEmbeddingNorm;
  if (stored != c->layernorm_embedding) {
    return Status::Error(StatusCode::kInvalidConfig,
                         stored ? "config.norm_placement = %d needs config.layernorm_embedding"
                                : "config.layernorm_embedding is stored with config.norm_placement "
                                  "= post_embedding_norm / pre_embedding_norm (format 1.7), not %d",
                         static_cast<int>(c->norm_placement));
  }
  if (stored) {
    c->norm_placement = c->norm_placement == NormPlacement::kPreEmbeddingNorm
                            ? NormPlacement::kPre
                            : NormPlacement::kPost;
  }
  return Status::Ok();
}

// Enum values this reader does not know (a newer file, or corrupt bytes) are refused before any
// cast to a C++ enum.
Status CheckEnums(const schema::Config& s) {
#define TERN_NO_CHECK(...)
#define TERN_CHECK_ENUM(name, key, Type, SchemaEnum, def, flags, since)                  \
  if (s.name() < schema::SchemaEnum##_MIN || s.name() > schema::SchemaEnum##_MAX) {      \
    return Status::Error(StatusCode::kInvalidConfig, "config." #name " = %d is unknown", \
                         static_cast<int>(s.name()));                                    \
  }
  TERN_CONFIG_FIELDS(TERN_NO_CHECK, TERN_NO_CHECK, TERN_NO_CHECK, TERN_CHECK_ENUM)
#undef TERN_CHECK_ENUM
  return Status::Ok();
}

Status CheckFloatField(const char* name, float v, FloatRange range) {
  switch (range) {
    case FloatRange::kFinite:
      if (std::isfinite(v)) return Status::Ok();
      return Status::Error(StatusCode::kInvalidConfig, "config.%s is not finite", name);
    case FloatRange::kNonNegative:
      if (v >= 0.0f && std::isfinite(v)) return Status::Ok();
      return Status::Error(StatusCode::kInvalidConfig, "config.%s is not a finite value >= 0",
                           name);
    case FloatRange::kPositive:
      if (v > 0.0f && std::isfinite(v)) return Status::Ok();
      return Status::Error(StatusCode::kInvalidConfig, "config.%s is not a finite value > 0", name);
    case FloatRange::kUnit:
      if (v >= 0.0f && v < 1.0f) return Status::Ok();
      return Status::Error(StatusCode::kInvalidConfig, "config.%s is not in [0, 1)", name);
  }
  return Status::Error(StatusCode::kInvalidConfig, "config.%s: unknown range", name);
}

// The bounds config_fields.h gives each field: kRange integers and every float.
Status CheckFieldBounds(const ModelConfig& c) {
#define TERN_CHECK_INT(name, key, def, lo, hi, flags, since)                                    \
  if (((flags)&FieldFlag::kRange) && (c.name < (lo) || c.name > (hi))) {                        \
    return Status::Error(StatusCode::kInvalidConfig, "config." #name " = %lld is out of range", \
                         static_cast<long long>(c.name));                                       \
  }
#define TERN_CHECK_FLOAT(name, key, def, range, flags, since) \
  TERN_RETURN_IF_ERROR(CheckFloatField(#name, c.name, range));
  TERN_CONFIG_FIELDS(TERN_CHECK_INT, TERN_CHECK_FLOAT, TERN_NO_CHECK, TERN_NO_CHECK)
#undef TERN_CHECK_INT
#undef TERN_CHECK_FLOAT
#undef TERN_NO_CHECK
  return Status::Ok();
}

}  // namespace

// The field list's own bounds first (config_fields.h), then the rules that relate fields: each
// field without kRange has its rule here.
Status CheckModelConfig(const ModelConfig& c) {
  TERN_RETURN_IF_ERROR(CheckFieldBounds(c));
  auto bad = [](const char* field, long long value) {
    return Status::Error(StatusCode::kInvalidConfig, "config.%s = %lld is out of range", field,
                         value);
  };
  if (c.heads <= 0 || c.heads > c.d_model) return bad("heads", c.heads);
  if (c.head_dim != 0 && static_cast<int64_t>(c.heads) * c.head_dim > ConfigBounds::kMaxDModel) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.heads * config.head_dim = %lld is out of range",
                         static_cast<long long>(c.heads) * c.head_dim);
  }
  if (c.head_dim == 0 && c.d_model % c.heads != 0) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.heads = %d does not divide config.d_model = %d", c.heads,
                         c.d_model);
  }
  if (c.kv_heads != 0 && (c.kv_heads < 0 || c.kv_heads > c.heads || c.heads % c.kv_heads != 0)) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.kv_heads = %d must divide config.heads = %d (grouped-query "
                         "attention: each K/V head serves heads / kv_heads query heads)",
                         c.kv_heads, c.heads);
  }
  // A decoder-only model (GPT) has no encoder and no source side: its config must say so
  // rather than carry fields nothing reads.
  const bool decoder_only = c.architecture == Architecture::kDecoderOnly;
  if (decoder_only) {
    if (c.encoder_layers != 0) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "config.encoder_layers = %d: a decoder-only model has no encoder (must be 0)",
          c.encoder_layers);
    }
    if (c.src_vocab_size != 0) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "config.src_vocab_size = %d: a decoder-only model has no source vocabulary "
          "(must be 0; its vocabulary is tgt_vocab_size)",
          c.src_vocab_size);
    }
    if (c.shared_embeddings) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "config.shared_embeddings: a decoder-only model has no encoder table to share");
    }
    if (c.decoder_layers < 1) return bad("decoder_layers", c.decoder_layers);
  } else if (c.src_vocab_size <= 0 || c.src_vocab_size > ConfigBounds::kMaxVocab) {
    return bad("src_vocab_size", c.src_vocab_size);
  }
  if (c.rotary_dim < 0 || c.rotary_dim > c.d_head() || c.rotary_dim % 2 != 0) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.rotary_dim = %d must be even and at most the head size %d",
                         c.rotary_dim, c.d_head());
  }
  if (c.rotary_scaling != ref::RotaryScaling::kNone && c.position != PositionKind::kRotary) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.rotary_scaling = %d needs config.position = rotary",
                         static_cast<int>(c.rotary_scaling));
  }
  if (c.rotary_scaling == ref::RotaryScaling::kLlama3 &&
      (c.rotary_original_max_positions < 1 || !(c.rotary_low_freq_factor > 0.0f) ||
       !(c.rotary_high_freq_factor > c.rotary_low_freq_factor))) {
    return Status::Error(
        StatusCode::kInvalidConfig,
        "config.rotary_scaling = llama3 needs rotary_original_max_positions >= 1 and "
        "0 < rotary_low_freq_factor < rotary_high_freq_factor (%d, %g, %g)",
        c.rotary_original_max_positions, static_cast<double>(c.rotary_low_freq_factor),
        static_cast<double>(c.rotary_high_freq_factor));
  }
  // The windowed cache is a ring (slot = position mod window): keys are found by slot, not by
  // distance, which relative positions (Shaw, T5) would need.
  if (c.sliding_window != 0 && (!decoder_only || c.position == PositionKind::kRelative)) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.sliding_window = %d needs a decoder-only model without relative "
                         "positions",
                         c.sliding_window);
  }
  const int32_t min_vocab =
      decoder_only || c.tgt_vocab_size < c.src_vocab_size ? c.tgt_vocab_size : c.src_vocab_size;
  const struct {
    const char* name;
    int32_t value;
  } ids[] = {{"pad_id", c.pad_id},
             {"bos_id", c.bos_id},
             {"eos_id", c.eos_id},
             {"unk_id", c.unk_id},
             {"decoder_start_id", c.decoder_start_id}};
  for (const auto& id : ids) {
    if (id.value < 0 || id.value >= min_vocab) {
      return Status::Error(StatusCode::kInvalidConfig,
                           "config.%s = %d is not a token id below the vocabulary size %d", id.name,
                           id.value, min_vocab);
    }
  }
  if (c.forced_bos_id < -1 || c.forced_bos_id >= c.tgt_vocab_size) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "config.forced_bos_id = %d is neither -1 (none) nor a token id below "
                         "tgt_vocab_size %d",
                         c.forced_bos_id, c.tgt_vocab_size);
  }
  if (c.shared_embeddings && c.src_vocab_size != c.tgt_vocab_size) {
    return Status::Error(
        StatusCode::kInvalidConfig,
        "config.shared_embeddings needs src_vocab_size == tgt_vocab_size (%d vs %d)",
        c.src_vocab_size, c.tgt_vocab_size);
  }
  return Status::Ok();
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

WeightView TensorInfo::AsWeight() const {
  WeightView w;
  w.dtype = dtype;
  w.data = data;
  w.rows = rank >= 2 ? dims[0] : 1;
  w.cols = rank >= 2 ? elements() / dims[0] : dims[0];
  w.scales = scales;
  w.group_size = group_size;
  return w;
}

Result<Model> Model::Load(const void* data, size_t size) {
  if (data == nullptr) return Status::Error(StatusCode::kInvalidArgument, "model data is null");
  if (reinterpret_cast<uintptr_t>(data) % kModelAlignment != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "model data must be %zu-byte aligned (64 recommended)", kModelAlignment);
  }
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 12) {
    return Status::Error(StatusCode::kInvalidModel,
                         "file is too small (%zu bytes) to be a .tern model", size);
  }
  if (!schema::SizePrefixedModelBufferHasIdentifier(bytes)) {
    return Status::Error(StatusCode::kInvalidModel,
                         "not a .tern model: file identifier is not \"%s\"",
                         schema::ModelIdentifier());
  }
  const uint32_t fb_size = flatbuffers::ReadScalar<uint32_t>(bytes);
  if (fb_size > size - sizeof(uint32_t) || fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Status::Error(StatusCode::kInvalidModel,
                         "truncated model: header says %u bytes of model description, file has %zu",
                         fb_size, size);
  }
  // Verify exactly the size-prefixed FlatBuffer; the weight segment after it is checked per
  // tensor below.
  flatbuffers::Verifier::Options options;
  options.max_tables = 1u << 20;
  flatbuffers::Verifier verifier(bytes, fb_size + sizeof(uint32_t), options);
  if (!schema::VerifySizePrefixedModelBuffer(verifier)) {
    return Status::Error(StatusCode::kInvalidModel,
                         "corrupt model: the model description failed FlatBuffers verification");
  }
  Model model;
  model.data_ = bytes;
  model.size_ = size;
  model.root_ = schema::GetSizePrefixedModel(bytes);
  model.format_major_ = model.root_->format_major();
  model.format_minor_ = model.root_->format_minor();
  if (model.format_major_ != kSupportedMajor) {
    return Status::Error(StatusCode::kUnsupportedVersion,
                         "model format version %u.%u; this runtime reads version %u.x",
                         model.format_major_, model.format_minor_, kSupportedMajor);
  }
  TERN_RETURN_IF_ERROR(CheckEnums(*model.root_->config()));
  model.config_ = ReadConfig(*model.root_->config());
  TERN_RETURN_IF_ERROR(UnstorePosition(&model.config_));
  TERN_RETURN_IF_ERROR(UnstoreArchitecture(&model.config_));
  TERN_RETURN_IF_ERROR(UnstoreNormPlacement(&model.config_));
  TERN_RETURN_IF_ERROR(CheckModelConfig(model.config_));
  TERN_RETURN_IF_ERROR(model.CheckTensors());
  const bool compact = model.root_->compact_shortlist() != nullptr;
  if (compact && model.root_->shortlist() != nullptr) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist and compact_shortlist are both set: a file holds one");
  }
  if ((compact || model.root_->shortlist() != nullptr) &&
      model.config_.architecture == Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kInvalidModel,
                         "%s: a decoder-only model has no source sentence to shortlist from",
                         compact ? "compact_shortlist" : "shortlist");
  }
  TERN_RETURN_IF_ERROR(
      ReadShortlist(compact ? model.root_->compact_shortlist() : model.root_->shortlist(), compact,
                    model.config_.src_vocab_size, model.config_.tgt_vocab_size, &model.shortlist_));
  TERN_RETURN_IF_ERROR(
      CheckLanguages(*model.root_, model.config_.src_vocab_size, model.config_.tgt_vocab_size));
  TERN_RETURN_IF_ERROR(model.CheckVocabularyMap());
  TERN_RETURN_IF_ERROR(model.CheckSpecials());
  // The architecture's tensors (names, shapes) are checked when a session is prepared
  // (ValidateArchitecture, runtime/models/architectures.h): the loader knows the file format
  // only, so it depends on nothing above runtime/model/.
  return model;
}

size_t Model::language_count() const {
  return root_ && root_->languages() ? root_->languages()->size() : 0;
}
const char* Model::language_code(size_t index) const {
  return root_->languages()->Get(static_cast<flatbuffers::uoffset_t>(index))->code()->c_str();
}
int32_t Model::language_token(size_t index) const {
  return root_->languages()->Get(static_cast<flatbuffers::uoffset_t>(index))->token();
}
Status Model::LanguageToken(const char* code, int32_t* token) const {
  if (root_ == nullptr) return Status::Error(StatusCode::kFailedPrecondition, "no model loaded");
  return FindLanguage(*root_, code, token);
}

size_t Model::tensor_count() const {
  return root_ && root_->tensors() ? root_->tensors()->size() : 0;
}

TensorInfo Model::tensor(size_t index) const { return Describe(root_->tensors()->Get(index)); }

TensorInfo Model::Describe(const schema::Tensor* t) const {
  TensorInfo info;
  info.name = t->name()->c_str();
  info.dtype = static_cast<DType>(t->dtype());
  info.rank = static_cast<int>(t->shape()->size());
  for (int i = 0; i < info.rank; ++i) info.dims[i] = t->shape()->Get(i);
  info.data = data_ + t->data_offset();
  info.data_size = t->data_size();
  if (const auto* q = t->quantization()) {
    if (q->scales()) {
      info.scales = q->scales()->data();
      info.scale_count = q->scales()->size();
    }
    info.group_size = q->group_size();
  }
  return info;
}

Status Model::CheckTensors() const {
  const auto* tensors = root_->tensors();
  if (tensors == nullptr || tensors->size() == 0) {
    return Status::Error(StatusCode::kInvalidModel, "model has no tensors");
  }
  const char* previous = nullptr;
  for (flatbuffers::uoffset_t i = 0; i < tensors->size(); ++i) {
    const schema::Tensor* t = tensors->Get(i);
    if (t->name() == nullptr || t->name()->size() == 0) {
      return Status::Error(StatusCode::kInvalidModel, "tensor #%u has no name", i);
    }
    const char* name = t->name()->c_str();
    if (std::strlen(name) != t->name()->size()) {
      return Status::Error(StatusCode::kInvalidModel, "tensor #%u has a name with a NUL byte", i);
    }
    if (previous != nullptr && std::strcmp(previous, name) >= 0) {
      return Status::Error(
          StatusCode::kInvalidModel,
          "tensor \"%s\" is out of order or duplicated (tensors must be sorted by name)", name);
    }
    previous = name;
    if (!ValidDType(t->dtype())) {
      return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\" has unknown dtype %d", name,
                           static_cast<int>(t->dtype()));
    }
    const auto* shape = t->shape();
    if (shape == nullptr || shape->size() == 0 || shape->size() > kMaxTensorRank) {
      return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\" has rank %u; 1 to %d allowed",
                           name, shape ? shape->size() : 0u, kMaxTensorRank);
    }
    // FlatBuffers 23.5's verifier checks a vector's length field (4-byte aligned), not that its
    // 8-byte elements are 8-byte aligned: a crafted file can place the shape so that reading it
    // is a misaligned 64-bit load (undefined behaviour; a fault on some ARM cores).
    if (reinterpret_cast<uintptr_t>(shape->data()) % alignof(int64_t) != 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tensor \"%s\": its shape is not 8-byte aligned in the file", name);
    }
    // Element count with overflow checks: each dim is bounded, and so is the product.
    constexpr int64_t kMaxElements = int64_t{1} << 40;
    int64_t elements = 1;
    for (flatbuffers::uoffset_t d = 0; d < shape->size(); ++d) {
      const int64_t dim = shape->Get(d);
      if (dim <= 0 || dim > kMaxElements || elements > kMaxElements / dim) {
        return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\" has invalid dimension %lld",
                             name, static_cast<long long>(dim));
      }
      elements *= dim;
    }
    const DType dtype = static_cast<DType>(t->dtype());
    const int64_t rows = shape->size() >= 2 ? shape->Get(0) : 1;
    const int64_t cols = elements / rows;
    const uint64_t expected =
        static_cast<uint64_t>(rows) * DTypeRowBytes(dtype, static_cast<size_t>(cols));
    if (t->data_size() != expected) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tensor \"%s\": data_size %llu, but %s %lldx%lld needs %llu bytes", name,
                           static_cast<unsigned long long>(t->data_size()), DTypeName(dtype),
                           static_cast<long long>(rows), static_cast<long long>(cols),
                           static_cast<unsigned long long>(expected));
    }
    if (t->data_offset() % kTensorDataAlignment != 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tensor \"%s\": data offset %llu is not %zu-byte aligned", name,
                           static_cast<unsigned long long>(t->data_offset()), kTensorDataAlignment);
    }
    if (t->data_offset() > size_ || t->data_size() > size_ - t->data_offset()) {
      return Status::Error(StatusCode::kInvalidModel,
                           "truncated model: tensor \"%s\" data [%llu, +%llu) lies past the end of "
                           "the %zu-byte file",
                           name, static_cast<unsigned long long>(t->data_offset()),
                           static_cast<unsigned long long>(t->data_size()), size_);
    }
    const auto* q = t->quantization();
    const bool quantized = dtype == DType::kI8 || dtype == DType::kI4;
    if (quantized) {
      if (q == nullptr || q->scales() == nullptr) {
        return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\" is %s but has no scales",
                             name, DTypeName(dtype));
      }
      if (q->zero_points() && q->zero_points()->size() != 0) {
        return Status::Error(
            StatusCode::kNotSupported,
            "tensor \"%s\": asymmetric quantization (zero points) is not supported", name);
      }
      const int64_t group = q->group_size();
      if (group < 0 || (group > 0 && group > cols)) {
        return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\": group_size %lld is invalid",
                             name, static_cast<long long>(group));
      }
      if (q->axis() != 0) {
        return Status::Error(
            StatusCode::kNotSupported,
            "tensor \"%s\": quantization axis %d; only per-row (axis 0) is supported", name,
            q->axis());
      }
      const int64_t groups = group > 0 ? (cols + group - 1) / group : 1;
      if (static_cast<int64_t>(q->scales()->size()) != rows * groups) {
        return Status::Error(StatusCode::kInvalidModel, "tensor \"%s\": %u scales, expected %lld",
                             name, q->scales()->size(), static_cast<long long>(rows * groups));
      }
      for (float s : *q->scales()) {
        if (!std::isfinite(s) || s < 0.0f) {
          return Status::Error(StatusCode::kInvalidModel,
                               "tensor \"%s\" has a non-finite or negative scale", name);
        }
      }
    }
  }
  return Status::Ok();
}

bool Model::Find(const char* name, TensorInfo* info) const {
  const auto* tensors = root_ ? root_->tensors() : nullptr;
  if (tensors == nullptr) return false;
  const schema::Tensor* t = tensors->LookupByKey(name);
  if (t == nullptr) return false;
  if (info) *info = Describe(t);
  return true;
}

Status Model::Require(const char* name, int rank, const int64_t* expected_dims,
                      TensorInfo* info) const {
  TensorInfo found;
  if (!Find(name, &found)) {
    return Status::Error(StatusCode::kMissingTensor, "required tensor \"%s\" is missing", name);
  }
  bool match = found.rank == rank;
  for (int i = 0; match && i < rank; ++i) {
    match = expected_dims[i] < 0 || expected_dims[i] == found.dims[i];
  }
  if (!match) {
    char want[96] = {0}, got[96] = {0};
    size_t w = 0, g = 0;
    for (int i = 0; i < rank && w < sizeof want; ++i) {
      w += std::snprintf(want + w, sizeof want - w, i ? ",%lld" : "%lld",
                         static_cast<long long>(expected_dims[i]));
    }
    for (int i = 0; i < found.rank && g < sizeof got; ++i) {
      g += std::snprintf(got + g, sizeof got - g, i ? ",%lld" : "%lld",
                         static_cast<long long>(found.dims[i]));
    }
    return Status::Error(StatusCode::kShapeMismatch, "tensor \"%s\" has shape [%s], expected [%s]",
                         name, got, want);
  }
  if (info) *info = found;
  return Status::Ok();
}

Span<const uint8_t> Model::source_tokenizer() const {
  const auto* tok = root_ ? root_->tokenizer() : nullptr;
  if (tok == nullptr) return {};
  if (tok->kind() == schema::TokenizerKind_SentencePieceSpecials) {
    const auto* specials = tok->specials();
    if (specials == nullptr || specials->model() == nullptr) return {};
    return {specials->model()->data(), specials->model()->size()};
  }
  if (tok->source_model() == nullptr) return {};
  return {tok->source_model()->data(), tok->source_model()->size()};
}

Model::PromptSpecials Model::prompt_specials() const {
  PromptSpecials out;
  const auto* tok = root_ ? root_->tokenizer() : nullptr;
  if (tok != nullptr && tok->kind() == schema::TokenizerKind_SentencePieceSpecials &&
      tok->specials() != nullptr) {
    out.add_bos = tok->specials()->add_bos();
    out.add_eos = tok->specials()->add_eos();
  }
  return out;
}

// A SentencePieceSpecials tokenizer (format 1.10) is a language model's: translation text paths
// do not read its add_bos / add_eos, so another architecture's file holding one is refused.
Status Model::CheckSpecials() const {
  const auto* tok = root_->tokenizer();
  if (tok == nullptr || tok->kind() != schema::TokenizerKind_SentencePieceSpecials) {
    return Status::Ok();
  }
  if (config_.architecture != Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer: kind SentencePieceSpecials is for decoder-only models");
  }
  if (source_tokenizer().empty()) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer.specials: kind SentencePieceSpecials needs a model");
  }
  return Status::Ok();
}

namespace {

// The SentencePiece model with a vocabulary map (format 1.8), when the file's tokenizer is one.
bool IsPair(const schema::Tokenizer* tok) {
  return tok != nullptr && tok->kind() == schema::TokenizerKind_SentencePieceMappedPair;
}

// The (source side's) SentencePiece model with a vocabulary map (format 1.8 / 1.9), when the
// file's tokenizer is one.
const schema::MappedSentencePiece* MappedOf(const schema::Model* root) {
  const auto* tok = root ? root->tokenizer() : nullptr;
  return tok != nullptr && (tok->kind() == schema::TokenizerKind_SentencePieceMapped || IsPair(tok))
             ? tok->mapped()
             : nullptr;
}

// The target side's: its own with a map per side (format 1.9), else the shared one.
const schema::MappedSentencePiece* TargetMappedOf(const schema::Model* root) {
  const auto* tok = root ? root->tokenizer() : nullptr;
  return IsPair(tok) ? tok->target_mapped() : MappedOf(root);
}

// A map's ids: each -1 or inside [0, vocab), each id at most once.
Status CheckMap(const char* field, Span<const int32_t> ids, int32_t vocab) {
  // Seen ids as bits: the vocabulary is bounded by the config check, this runs once per load.
  std::vector<uint8_t> seen(static_cast<size_t>(vocab), 0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] == -1) continue;
    if (ids[p] < 0 || ids[p] >= vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer.%s.model_ids[%zu] = %d is outside the vocabulary (%d)", field,
                           p, ids[p], vocab);
    }
    if (seen[ids[p]]++) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer.%s.model_ids[%zu] = %d: another piece has that id", field, p,
                           ids[p]);
    }
  }
  return Status::Ok();
}

}  // namespace

Span<const uint8_t> Model::mapped_tokenizer() const {
  const auto* mapped = MappedOf(root_);
  if (mapped == nullptr || mapped->model() == nullptr) return {};
  return {mapped->model()->data(), mapped->model()->size()};
}

Span<const int32_t> Model::vocabulary_map() const {
  const auto* mapped = MappedOf(root_);
  if (mapped == nullptr || mapped->model_ids() == nullptr) return {};
  return {mapped->model_ids()->data(), mapped->model_ids()->size()};
}

Span<const uint8_t> Model::target_mapped_tokenizer() const {
  const auto* mapped = TargetMappedOf(root_);
  if (mapped == nullptr || mapped->model() == nullptr) return {};
  return {mapped->model()->data(), mapped->model()->size()};
}

Span<const int32_t> Model::target_vocabulary_map() const {
  const auto* mapped = TargetMappedOf(root_);
  if (mapped == nullptr || mapped->model_ids() == nullptr) return {};
  return {mapped->model_ids()->data(), mapped->model_ids()->size()};
}

int32_t Model::mapped_vocab_size() const {
  if (IsPair(root_ ? root_->tokenizer() : nullptr)) return config_.src_vocab_size;
  return config_.architecture == Architecture::kDecoderOnly
             ? config_.tgt_vocab_size
             : std::min(config_.src_vocab_size, config_.tgt_vocab_size);
}

int32_t Model::target_mapped_vocab_size() const {
  return IsPair(root_ ? root_->tokenizer() : nullptr) ? config_.tgt_vocab_size
                                                      : mapped_vocab_size();
}

Status Model::CheckVocabularyMap() const {
  const auto* tok = root_->tokenizer();
  if (tok == nullptr ||
      (tok->kind() != schema::TokenizerKind_SentencePieceMapped && !IsPair(tok))) {
    return Status::Ok();
  }
  if (mapped_tokenizer().empty() || vocabulary_map().empty()) {
    return Status::Error(StatusCode::kInvalidModel,
                         IsPair(tok) ? "tokenizer.mapped: kind SentencePieceMappedPair needs a "
                                       "model and model_ids per side"
                                     : "tokenizer.mapped: kind SentencePieceMapped needs a model "
                                       "and model_ids");
  }
  TERN_RETURN_IF_ERROR(CheckMap("mapped", vocabulary_map(), mapped_vocab_size()));
  if (!IsPair(tok)) return Status::Ok();
  if (target_mapped_tokenizer().empty() || target_vocabulary_map().empty()) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer.target_mapped: kind SentencePieceMappedPair needs a model and "
                         "model_ids per side");
  }
  return CheckMap("target_mapped", target_vocabulary_map(), target_mapped_vocab_size());
}

Span<const uint8_t> Model::target_tokenizer() const {
  const auto* tok = root_ ? root_->tokenizer() : nullptr;
  if (tok == nullptr) return {};
  if (tok->target_model() == nullptr || tok->target_model()->size() == 0) return source_tokenizer();
  return {tok->target_model()->data(), tok->target_model()->size()};
}

}  // namespace tern
