#include "runtime/tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <cstdlib>

#include "runtime/model/model.h"

namespace tern {

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Status Tokenizer::Load(Span<const uint8_t> serialized_model) {
  if (serialized_model.empty()) {
    return Status::Error(StatusCode::kFailedPrecondition, "the model file has no tokenizer");
  }
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(absl::string_view(
      reinterpret_cast<const char*>(serialized_model.data()), serialized_model.size()));
  if (!status.ok()) {
    return Status::Error(StatusCode::kInvalidModel, "tokenizer: %s", status.ToString().c_str());
  }
  processor_ = std::move(processor);
  piece_to_model_.clear();
  model_to_piece_.clear();
  return Status::Ok();
}

Status Tokenizer::SetVocabularyMap(Span<const int32_t> model_ids, int32_t model_vocab,
                                   int32_t unk_id) {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  const int32_t pieces = processor_->GetPieceSize();
  if (model_ids.size() != static_cast<size_t>(pieces)) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer.mapped.model_ids has %zu entries; the SentencePiece model "
                         "has %d pieces",
                         model_ids.size(), pieces);
  }
  if (model_vocab <= 0 || unk_id < 0 || unk_id >= model_vocab) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer.mapped: unk_id %d is outside the vocabulary of %d", unk_id,
                         model_vocab);
  }
  std::vector<int32_t> to_piece(static_cast<size_t>(model_vocab), -1);
  for (int32_t p = 0; p < pieces; ++p) {
    const int32_t id = model_ids[p];
    if (id == -1) continue;
    if (id < 0 || id >= model_vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer.mapped.model_ids[%d] = %d is outside the vocabulary of %d", p,
                           id, model_vocab);
    }
    if (to_piece[id] >= 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer.mapped.model_ids[%d] = %d is also piece %d's id", p, id,
                           to_piece[id]);
    }
    to_piece[id] = p;
  }
  piece_to_model_.assign(model_ids.begin(), model_ids.end());
  model_to_piece_ = std::move(to_piece);
  unk_id_ = unk_id;
  return Status::Ok();
}

Status Tokenizer::LoadMapped(const Model& model) {
  TERN_RETURN_IF_ERROR(Load(model.mapped_tokenizer()));
  return SetVocabularyMap(model.vocabulary_map(), model.mapped_vocab_size(), model.config().unk_id);
}

Status Tokenizer::LoadMappedTarget(const Model& model) {
  TERN_RETURN_IF_ERROR(Load(model.target_mapped_tokenizer()));
  return SetVocabularyMap(model.target_vocabulary_map(), model.target_mapped_vocab_size(),
                          model.config().unk_id);
}

int32_t Tokenizer::PieceOf(int32_t id) const {
  if (!mapped()) return id;
  return model_to_piece_[id];
}

Status Tokenizer::Encode(const std::string& text, bool append_eos, int32_t eos_id,
                         std::vector<int32_t>* ids) const {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  const int64_t bad = FindInvalidUtf8(text.data(), text.size());
  if (bad >= 0) {
    return Status::Error(StatusCode::kInvalidArgument, "input is not valid UTF-8 (byte %lld)",
                         static_cast<long long>(bad));
  }
  std::vector<int> pieces;
  const auto status = processor_->Encode(text, &pieces);
  if (!status.ok())
    return Status::Error(StatusCode::kInvalidArgument, "tokenizer: %s", status.ToString().c_str());
  ids->assign(pieces.begin(), pieces.end());
  if (mapped()) {
    for (int32_t& id : *ids) {
      const int32_t model_id = piece_to_model_[id];
      id = model_id >= 0 ? model_id : unk_id_;
    }
  }
  if (append_eos) ids->push_back(eos_id);
  return Status::Ok();
}

Status Tokenizer::Decode(const int32_t* ids, size_t count, std::string* text) const {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  std::vector<int> pieces;
  pieces.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size()) {
      return Status::Error(StatusCode::kOutOfRange, "id %d is outside the tokenizer's vocabulary",
                           id);
    }
    const int32_t piece = PieceOf(id);
    if (piece >= 0) pieces.push_back(piece);  // a model id without a piece: no text
  }
  const auto status = processor_->Decode(pieces, text);
  if (!status.ok())
    return Status::Error(StatusCode::kInternal, "tokenizer: %s", status.ToString().c_str());
  return Status::Ok();
}

int32_t Tokenizer::bos_id() const {
  if (!processor_) return -1;
  const int32_t bos = processor_->bos_id();
  if (!mapped() || bos < 0) return bos;
  return piece_to_model_[bos];
}

int32_t Tokenizer::eos_id() const {
  if (!processor_) return -1;
  const int32_t eos = processor_->eos_id();
  if (!mapped() || eos < 0) return eos;
  return piece_to_model_[eos];
}

Status Tokenizer::PieceBytes(int32_t id, bool print_control, std::string* bytes) const {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  if (id < 0 || id >= vocab_size()) {
    return Status::Error(StatusCode::kOutOfRange, "id %d is outside the tokenizer's vocabulary",
                         id);
  }
  if (mapped()) {
    id = model_to_piece_[id];
    if (id < 0) return Status::Ok();  // a model id without a piece (a language code): no bytes
  }
  const std::string& piece = processor_->IdToPiece(id);
  if (processor_->IsControl(id)) {
    if (print_control) bytes->append(piece);
    return Status::Ok();
  }
  if (processor_->IsUnknown(id)) {
    bytes->append(" \xE2\x81\x87 ");
    return Status::Ok();
  }
  if (processor_->IsByte(id)) {  // "<0xAB>"
    const std::string hex = piece.substr(3, 2);
    bytes->push_back(static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
    return Status::Ok();
  }
  static const char kSpace[] = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, 3, kSpace) == 0) {
      bytes->push_back(' ');
      i += 3;
    } else {
      bytes->push_back(piece[i++]);
    }
  }
  return Status::Ok();
}

int32_t Tokenizer::vocab_size() const {
  if (!processor_) return 0;
  return mapped() ? static_cast<int32_t>(model_to_piece_.size()) : processor_->GetPieceSize();
}

}  // namespace tern
