// A verified, read-only view of a .tern file held in caller memory (mapped file, flash, or a
// buffer). Loading copies nothing and allocates nothing: it checks the bytes and records where
// things are. The bytes must outlive the Model and every Session made from it. A Model is
// immutable after Load, so any number of threads may share one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/dtype.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/tensor.h"
#include "runtime/model/config.h"
#include "runtime/model/shortlist.h"

namespace tern {

namespace schema {
struct Model;
struct Tensor;
}  // namespace schema

inline constexpr int kMaxTensorRank = 4;
// Model bytes must be at least this aligned (tensor data offsets are multiples of 64 within
// the file, so a 64-byte aligned buffer gives 64-byte aligned weights; mmap gives a page).
inline constexpr size_t kModelAlignment = 16;
inline constexpr size_t kTensorDataAlignment = 64;

struct TensorInfo {
  const char* name = nullptr;
  DType dtype = DType::kF32;
  int rank = 0;
  int64_t dims[kMaxTensorRank] = {0, 0, 0, 0};
  const void* data = nullptr;
  uint64_t data_size = 0;
  const float* scales = nullptr;  // Quantized dtypes only.
  int64_t scale_count = 0;
  int64_t group_size = 0;

  int64_t elements() const;
  // The tensor as a 2-D weight [dims[0], product of the rest] (rank 1: [1, dims[0]]).
  WeightView AsWeight() const;
};

// The bounds every config must meet (ConfigBounds, ids inside the vocabulary, consistent
// architecture fields); Model::Load applies it, and the converter applies it before anything
// is sized from a config. The message names the field.
Status CheckModelConfig(const ModelConfig& config);

class Model {
 public:
  Model() = default;

  // Verifies the FlatBuffer, the format version, the config and every tensor record (bounds,
  // alignment, sizes, quantization parameters): the file format. Any problem is an error naming
  // it; nothing here can crash on bad bytes. Whether the architecture's tensors are all there
  // with the right shapes is checked by Session / Generator RequiredArenaBytes and Prepare
  // (ValidateArchitecture, runtime/models/architectures.h), which refuse the model by name.
  static Result<Model> Load(const void* data, size_t size);

  // Told, during a session's Prepare, of a tensor the session will not read again: the XNNPACK
  // backend packed a copy of it into the arena (or copied it as it is, for tern's own loops).
  // Whoever provided the bytes may give their memory back: a read-only file mapping drops those
  // pages (they load again from the file if anything does read them, e.g. a second session's
  // Prepare), so the weights are not resident twice. Not set (caller memory: flash, a heap copy):
  // nothing happens.
  using ConsumedHook = void (*)(void* user, const void* data, size_t bytes);
  void set_consumed_hook(ConsumedHook hook, void* user) {
    consumed_ = hook;
    consumed_user_ = user;
  }
  void Consumed(const void* data, size_t bytes) const {
    if (consumed_ != nullptr) consumed_(consumed_user_, data, bytes);
  }

  const ModelConfig& config() const { return config_; }
  uint16_t format_major() const { return format_major_; }
  uint16_t format_minor() const { return format_minor_; }
  size_t tensor_count() const;
  TensorInfo tensor(size_t index) const;
  // Binary search by name (tensors are sorted by name in the file; Load checks it).
  bool Find(const char* name, TensorInfo* info) const;
  // Find, then check dtype class and shape. expected_dims of -1 match anything.
  Status Require(const char* name, int rank, const int64_t* expected_dims, TensorInfo* info) const;
  // Serialized SentencePiece models; empty when the file has none. For a language model's
  // SentencePieceSpecials (format 1.10) the source is that table's model.
  Span<const uint8_t> source_tokenizer() const;
  // The SentencePiece tokens a language model's text path puts around a prompt: BOS before, no
  // EOS after, unless the file's tokenizer is SentencePieceSpecials (tokenizer_config.json's
  // add_bos_token / add_eos_token, format 1.10).
  struct PromptSpecials {
    bool add_bos = true;
    bool add_eos = false;
  };
  PromptSpecials prompt_specials() const;
  Span<const uint8_t> target_tokenizer() const;
  // Format 1.8 (TokenizerKind SentencePieceMapped): a SentencePiece model serving both sides and
  // its piece -> model id map (empty when the file has none). Load checks the map: every id -1
  // or inside mapped_vocab_size(), each at most once.
  Span<const uint8_t> mapped_tokenizer() const;
  Span<const int32_t> vocabulary_map() const;
  // The target side's (format 1.9, TokenizerKind SentencePieceMappedPair: Marian's target.spm
  // through vocab.json): its own model and map, checked by Load as the source's; with one model
  // for both sides (SentencePieceMapped) these are mapped_tokenizer() / vocabulary_map().
  Span<const uint8_t> target_mapped_tokenizer() const;
  Span<const int32_t> target_vocabulary_map() const;
  // The vocabulary the map's ids lie in: the target's for a decoder-only model, else the
  // smaller of source and target (a shared tokenizer's ids are both).
  int32_t mapped_vocab_size() const;
  // The target map's vocabulary: tgt_vocab_size with a map per side, else mapped_vocab_size().
  int32_t target_mapped_vocab_size() const;
  // The vocabulary shortlist (format 1.5), checked by Load; present() is false without one.
  const ShortlistTable& shortlist() const { return shortlist_; }
  // The language table (format 1.7; runtime/model/languages.h), checked by Load: entries sorted
  // by code; LanguageToken finds one, or names the nearest known codes.
  size_t language_count() const;
  const char* language_code(size_t index) const;
  int32_t language_token(size_t index) const;
  Status LanguageToken(const char* code, int32_t* token) const;
  const schema::Model* schema() const { return root_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Status CheckTensors() const;
  Status CheckVocabularyMap() const;
  Status CheckSpecials() const;
  TensorInfo Describe(const schema::Tensor* tensor) const;

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  const schema::Model* root_ = nullptr;
  ModelConfig config_;
  ShortlistTable shortlist_;
  uint16_t format_major_ = 0;
  uint16_t format_minor_ = 0;
  ConsumedHook consumed_ = nullptr;
  void* consumed_user_ = nullptr;
};

}  // namespace tern
