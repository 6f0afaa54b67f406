#include "runtime/tokenizer/tokenizer.h"

#include <sentencepiece_processor.h>

#include <cstdlib>

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
  return Status::Ok();
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
  if (append_eos) ids->push_back(eos_id);
  return Status::Ok();
}

Status Tokenizer::Decode(const int32_t* ids, size_t count, std::string* text) const {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  std::vector<int> pieces(ids, ids + count);
  for (int id : pieces) {
    if (id < 0 || id >= processor_->GetPieceSize()) {
      return Status::Error(StatusCode::kOutOfRange, "id %d is outside the tokenizer's vocabulary",
                           id);
    }
  }
  const auto status = processor_->Decode(pieces, text);
  if (!status.ok())
    return Status::Error(StatusCode::kInternal, "tokenizer: %s", status.ToString().c_str());
  return Status::Ok();
}

int32_t Tokenizer::bos_id() const { return processor_ ? processor_->bos_id() : -1; }

Status Tokenizer::PieceBytes(int32_t id, bool print_control, std::string* bytes) const {
  if (!processor_) return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  if (id < 0 || id >= processor_->GetPieceSize()) {
    return Status::Error(StatusCode::kOutOfRange, "id %d is outside the tokenizer's vocabulary",
                         id);
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

int32_t Tokenizer::vocab_size() const { return processor_ ? processor_->GetPieceSize() : 0; }

}  // namespace tern
