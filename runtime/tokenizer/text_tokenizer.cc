#include "runtime/tokenizer/text_tokenizer.h"

#include "runtime/model/model.h"
#include "tern_generated.h"

namespace tern {

Status TextTokenizer::Load(const Model& model) {
  kind_ = Kind::kNone;
  const schema::Tokenizer* stored = model.schema() ? model.schema()->tokenizer() : nullptr;
  if (stored != nullptr && stored->kind() == schema::TokenizerKind_ByteLevelBpe) {
    auto bpe = BpeTokenizer::FromModel(model);
    if (!bpe.ok()) return bpe.status();
    bpe_ = bpe.value();
    kind_ = Kind::kByteLevelBpe;
  } else if (!model.mapped_tokenizer().empty()) {
    TERN_RETURN_IF_ERROR(sentencepiece_.LoadMapped(model));
    kind_ = Kind::kSentencePiece;
  } else if (!model.source_tokenizer().empty()) {
    TERN_RETURN_IF_ERROR(sentencepiece_.Load(model.source_tokenizer()));
    kind_ = Kind::kSentencePiece;
  }
  add_bos_ = model.prompt_specials().add_bos;
  add_eos_ = model.prompt_specials().add_eos;
  if (kind_ != Kind::kNone) {
    const int32_t vocab =
        kind_ == Kind::kSentencePiece ? sentencepiece_.vocab_size() : bpe_.vocab_size();
    max_token_bytes_ = 0;
    for (int32_t id = 0; id < vocab; ++id) {
      Span<const uint8_t> bytes;
      TERN_RETURN_IF_ERROR(TokenBytes(id, true, &bytes));
      if (bytes.size() > max_token_bytes_) max_token_bytes_ = bytes.size();
    }
    piece_.reserve(max_token_bytes_);
    return Status::Ok();
  }
  return Status::Error(StatusCode::kFailedPrecondition,
                       "the model file has no tokenizer (convert it with tokenizer.json or "
                       "tokenizer.model beside the checkpoint, or give token ids)");
}

const char* TextTokenizer::kind_name() const {
  switch (kind_) {
    case Kind::kByteLevelBpe:
      return "byte-level BPE";
    case Kind::kSentencePiece:
      return "SentencePiece";
    case Kind::kNone:
      break;
  }
  return "none";
}

Status TextTokenizer::EncodePrompt(const char* text, size_t size, bool add_special_tokens,
                                   bool parse_special, std::vector<int32_t>* ids) {
  if (kind_ == Kind::kSentencePiece) {
    TERN_RETURN_IF_ERROR(sentencepiece_.Encode(std::string(text, size), false, 0, ids));
    const int32_t bos = sentencepiece_.bos_id(), eos = sentencepiece_.eos_id();
    if (add_special_tokens && add_bos_ && bos >= 0) ids->insert(ids->begin(), bos);
    if (add_special_tokens && add_eos_ && eos >= 0) ids->push_back(eos);
    return Status::Ok();
  }
  if (kind_ != Kind::kByteLevelBpe) {
    return Status::Error(StatusCode::kFailedPrecondition, "no tokenizer loaded");
  }
  if (size > BpeTokenizer::MaxTextBytes()) {
    return Status::Error(StatusCode::kOutOfRange, "the prompt has %zu bytes; at most %zu", size,
                         BpeTokenizer::MaxTextBytes());
  }
  BpeEncodeOptions options;
  options.add_special_tokens = add_special_tokens;
  options.parse_special = parse_special;
  const size_t need = bpe_.EncodeWorkspaceBytes(size);
  if (workspace_.size() < need) workspace_.resize(need);
  // At most one id per byte, plus the post-processor's tokens: a first try with what the
  // vector holds, a second with the exact count (the capacity then stays for later prompts).
  if (ids->capacity() < size + 8) ids->reserve(size + 8);
  ids->resize(ids->capacity());
  size_t count = 0;
  Status s = bpe_.Encode(text, size, options, Span<int32_t>(ids->data(), ids->size()), &count,
                         Span<uint8_t>(workspace_.data(), workspace_.size()));
  if (s.code() == StatusCode::kOutOfRange && count > ids->size()) {
    ids->resize(count);
    s = bpe_.Encode(text, size, options, Span<int32_t>(ids->data(), ids->size()), &count,
                    Span<uint8_t>(workspace_.data(), workspace_.size()));
  }
  TERN_RETURN_IF_ERROR(s);
  ids->resize(count);
  return Status::Ok();
}

Status TextTokenizer::TokenBytes(int32_t id, bool print_special, Span<const uint8_t>* bytes) {
  // A model's vocabulary may be larger than its tokenizer's (embeddings padded to a multiple of
  // 64, say): ids past the tokenizer's give no text.
  const int32_t tokenizer_vocab =
      kind_ == Kind::kSentencePiece ? sentencepiece_.vocab_size() : bpe_.vocab_size();
  if (kind_ != Kind::kNone && id >= tokenizer_vocab) {
    *bytes = Span<const uint8_t>();
    return Status::Ok();
  }
  if (kind_ == Kind::kSentencePiece) {
    piece_.clear();
    TERN_RETURN_IF_ERROR(sentencepiece_.PieceBytes(id, print_special, &piece_));
    *bytes = Span<const uint8_t>(reinterpret_cast<const uint8_t*>(piece_.data()), piece_.size());
    return Status::Ok();
  }
  if (kind_ != Kind::kByteLevelBpe) {
    return Status::Error(StatusCode::kFailedPrecondition, "no tokenizer loaded");
  }
  if (id >= 0 && bpe_.IsSpecial(id) && !print_special) {
    *bytes = Span<const uint8_t>();
    return Status::Ok();
  }
  return bpe_.TokenBytes(id, bytes);
}

}  // namespace tern
