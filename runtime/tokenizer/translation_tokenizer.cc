#include "runtime/tokenizer/translation_tokenizer.h"

#include "runtime/model/model.h"

namespace tern {

Status TranslationTokenizer::Load(const Model& model) {
  loaded_ = is_bpe_ = false;
  if (!model.mapped_tokenizer().empty()) {  // format 1.8: one model and its map, both sides;
    TERN_RETURN_IF_ERROR(source_.LoadMapped(model));  // 1.9: a model and map per side
    TERN_RETURN_IF_ERROR(target_.LoadMappedTarget(model));
    loaded_ = true;
    return Status::Ok();
  }
  if (model.source_tokenizer().empty()) {
    auto bpe = BpeTokenizer::FromModel(model);
    if (bpe.ok()) {
      bpe_ = bpe.value();
      loaded_ = is_bpe_ = true;
      return Status::Ok();
    }
  }
  TERN_RETURN_IF_ERROR(source_.Load(model.source_tokenizer()));
  TERN_RETURN_IF_ERROR(target_.Load(model.target_tokenizer()));
  loaded_ = true;
  return Status::Ok();
}

Status TranslationTokenizer::Encode(const std::string& text, int32_t eos_id,
                                    std::vector<int32_t>* ids) const {
  if (!loaded_) return Status::Error(StatusCode::kFailedPrecondition, "no tokenizer loaded");
  if (!is_bpe_) return source_.Encode(text, true, eos_id, ids);
  BpeEncodeOptions options;
  options.add_special_tokens = true;
  TERN_RETURN_IF_ERROR(bpe_.Encode(text, options, ids));
  if (ids->empty() || ids->back() != eos_id) ids->push_back(eos_id);
  return Status::Ok();
}

Status TranslationTokenizer::Decode(const int32_t* ids, size_t count, std::string* text) const {
  if (!loaded_) return Status::Error(StatusCode::kFailedPrecondition, "no tokenizer loaded");
  if (!is_bpe_) return target_.Decode(ids, count, text);
  text->clear();
  return bpe_.Decode(Span<const int32_t>(ids, count), true, text);
}

}  // namespace tern
