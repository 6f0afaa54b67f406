#include "runtime/tokenizer/bpe_tokenizer.h"

#include <cstdint>
#include <cstring>

#include "runtime/model/model.h"
#include "runtime/tokenizer/nfc.h"
#include "runtime/tokenizer/utf8.h"
#include "tern_generated.h"

namespace tern {

namespace {

int CompareBytes(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size) {
  const int c = std::memcmp(a, b, a_size < b_size ? a_size : b_size);
  if (c != 0) return c;
  return a_size < b_size ? -1 : a_size > b_size ? 1 : 0;
}

size_t AlignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

Status Invalid(const char* what) {
  return Status::Error(StatusCode::kInvalidModel, "tokenizer: %s", what);
}

}  // namespace

// The encoding of one text: the two added-token passes, then pre-tokenization and merging.
class BpeEncoding final : public bpe::AddedTokenSink, public bpe::PieceSink {
 public:
  BpeEncoding(const BpeTokenizer& t, const BpeEncodeOptions& options, bpe::IdWriter* out,
              Span<uint8_t> scratch, Span<uint8_t> merge_workspace, Span<uint32_t> nfc_work,
              Span<uint8_t> nfc_out)
      : t_(t),
        options_(options),
        out_(out),
        scratch_(scratch),
        merge_workspace_(merge_workspace),
        nfc_work_(nfc_work),
        nfc_out_(nfc_out) {}

  Status Run(const uint8_t* text, size_t size) {
    return t_.added_.Split(text, size, /*normalized=*/false, options_.parse_special, this);
  }

  // The text between the tokens of the first pass is normalized; in it the second pass
  // (normalized = true) finds its tokens, and the text between those is pre-tokenized.
  Status Gap(const uint8_t* text, size_t size) override {
    if (in_second_pass_) return t_.pre_tokenizer_.Run(text, size, scratch_, this);
    if (t_.nfc_) {
      size_t normalized = 0;
      TERN_RETURN_IF_ERROR(unicode::NormalizeNfc(text, size, nfc_work_, nfc_out_, &normalized));
      text = nfc_out_.data();
      size = normalized;
    }
    in_second_pass_ = true;
    const Status s = t_.added_.Split(text, size, /*normalized=*/true, options_.parse_special, this);
    in_second_pass_ = false;
    return s;
  }
  Status Token(int32_t id) override {
    out_->Push(id);
    return Status::Ok();
  }
  Status Piece(const uint8_t* data, size_t size) override {
    if (t_.table_->ignore_merges()) {
      const int32_t id = t_.FindByBytes(data, size);
      if (id >= 0) {
        out_->Push(id);
        return Status::Ok();
      }
    }
    return t_.merger_.MergePiece(data, size, merge_workspace_, out_);
  }

 private:
  const BpeTokenizer& t_;
  const BpeEncodeOptions& options_;
  bpe::IdWriter* out_;
  Span<uint8_t> scratch_;
  Span<uint8_t> merge_workspace_;
  Span<uint32_t> nfc_work_;
  Span<uint8_t> nfc_out_;
  bool in_second_pass_ = false;
};

Result<BpeTokenizer> BpeTokenizer::FromModel(const Model& model) {
  const schema::Tokenizer* tok = model.schema() ? model.schema()->tokenizer() : nullptr;
  if (tok == nullptr || tok->kind() == schema::TokenizerKind_None) {
    return Status::Error(StatusCode::kFailedPrecondition, "the model file has no tokenizer");
  }
  if (tok->kind() != schema::TokenizerKind_ByteLevelBpe) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "the model file's tokenizer is %s, not byte-level BPE",
                         tok->kind() == schema::TokenizerKind_SentencePiece ? "SentencePiece"
                                                                            : "of an unknown kind");
  }
  if (tok->byte_level_bpe() == nullptr) {
    return Invalid("kind ByteLevelBpe without its byte_level_bpe table");
  }
  return FromTable(*tok->byte_level_bpe());
}

Result<BpeTokenizer> BpeTokenizer::FromTable(const schema::ByteLevelBpe& table) {
  const auto* offsets = table.token_offsets();
  const auto* bytes = table.token_bytes();
  if (offsets == nullptr || offsets->size() < 2 || bytes == nullptr) {
    return Invalid("no vocabulary (token_offsets, token_bytes)");
  }
  if (offsets->size() - 1 > 0x7FFFFFFF) return Invalid("more than 2^31 - 1 tokens");
  const auto vocab = static_cast<int32_t>(offsets->size() - 1);
  if (offsets->Get(0) != 0 || offsets->Get(offsets->size() - 1) != bytes->size()) {
    return Invalid("token_offsets do not start at 0 and end at the size of token_bytes");
  }
  for (uint32_t i = 1; i < offsets->size(); ++i) {
    if (offsets->Get(i) < offsets->Get(i - 1)) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: token_offsets decrease at token %u", i - 1);
    }
  }
  auto in_vocab = [vocab](int32_t id) { return id >= 0 && id < vocab; };
  auto token = [&](int32_t id, size_t* size) {
    *size = offsets->Get(id + 1) - offsets->Get(id);
    return bytes->data() + offsets->Get(id);
  };

  const auto* byte_tokens = table.byte_tokens();
  if (byte_tokens == nullptr || byte_tokens->size() != 256) {
    return Invalid("byte_tokens does not have 256 entries");
  }
  for (uint32_t b = 0; b < 256; ++b) {
    const int32_t id = byte_tokens->Get(b);
    size_t size = 0;
    if (!in_vocab(id) || (token(id, &size), size != 1) || *token(id, &size) != b) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: byte_tokens[%u] = %d is not the token of that byte", b, id);
    }
  }

  // Merges: sorted pairs inside the vocabulary whose result is the two tokens' bytes together,
  // so that decoding always gives back the text.
  const auto* merges = table.merges();
  const size_t merge_count = merges ? merges->size() : 0;
  for (uint32_t i = 0; i < merge_count; ++i) {
    const schema::BpeMerge* m = merges->Get(i);
    if (!in_vocab(m->left()) || !in_vocab(m->right()) || !in_vocab(m->result()) || m->rank() < 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: merge %u has an id outside the %d tokens or a negative rank",
                           i, vocab);
    }
    if (i > 0) {
      const schema::BpeMerge* p = merges->Get(i - 1);
      if (p->left() > m->left() || (p->left() == m->left() && p->right() >= m->right())) {
        return Status::Error(StatusCode::kInvalidModel,
                             "tokenizer: merges are not sorted by (left, right) at %u", i);
      }
    }
    size_t left_size, right_size, result_size;
    const uint8_t* left = token(m->left(), &left_size);
    const uint8_t* right = token(m->right(), &right_size);
    const uint8_t* result = token(m->result(), &result_size);
    if (result_size != left_size + right_size || std::memcmp(result, left, left_size) != 0 ||
        std::memcmp(result + left_size, right, right_size) != 0) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: merge %u: token %d is not tokens %d and %d together", i,
                           m->result(), m->left(), m->right());
    }
  }

  const auto* by_bytes = table.vocab_by_bytes();
  for (uint32_t i = 0; by_bytes && i < by_bytes->size(); ++i) {
    if (!in_vocab(by_bytes->Get(i))) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: vocab_by_bytes[%u] = %d is outside the %d tokens", i,
                           by_bytes->Get(i), vocab);
    }
    if (i > 0) {
      size_t a_size, b_size;
      const uint8_t* a = token(by_bytes->Get(i - 1), &a_size);
      const uint8_t* b = token(by_bytes->Get(i), &b_size);
      if (CompareBytes(a, a_size, b, b_size) >= 0) {
        return Status::Error(StatusCode::kInvalidModel,
                             "tokenizer: vocab_by_bytes is not sorted and unique at %u", i);
      }
    }
  }
  for (const auto* ids : {table.prefix_ids(), table.suffix_ids()}) {
    for (uint32_t i = 0; ids && i < ids->size(); ++i) {
      if (!in_vocab(ids->Get(i))) {
        return Status::Error(StatusCode::kInvalidModel,
                             "tokenizer: post-processor token %d is outside the %d tokens",
                             ids->Get(i), vocab);
      }
    }
  }

  if (table.normalizer() != schema::Normalizer_None &&
      table.normalizer() != schema::Normalizer_NFC) {
    return Status::Error(StatusCode::kInvalidModel, "tokenizer: normalizer %d is unknown",
                         static_cast<int>(table.normalizer()));
  }
  BpeTokenizer t;
  t.table_ = &table;
  t.vocab_size_ = vocab;
  t.nfc_ = table.normalizer() == schema::Normalizer_NFC;
  const auto* steps = table.pre_tokenizer();
  TERN_RETURN_IF_ERROR(
      t.pre_tokenizer_.Init(steps ? reinterpret_cast<const uint8_t*>(steps->data()) : nullptr,
                            steps ? steps->size() : 0));
  t.merger_ =
      bpe::BpeMerger(merge_count > 0 ? merges->Get(0) : nullptr, merge_count, byte_tokens->data());
  TERN_RETURN_IF_ERROR(t.added_.Init(table, vocab));
  return t;
}

size_t BpeTokenizer::merge_count() const {
  return table_ && table_->merges() ? table_->merges()->size() : 0;
}

size_t BpeTokenizer::MaxTextBytes() {
  // Piece positions are int32_t, NFC triples the text at most, and the workspace (below 256
  // bytes per byte) must fit in size_t.
  const size_t by_size = (SIZE_MAX - 1024) / 256;
  return by_size < 0x7FFFFFFEu / 3 ? by_size : 0x7FFFFFFEu / 3;
}

namespace {

// Where the parts of the Encode workspace are, for text of `size` bytes.
struct WorkspaceLayout {
  size_t piece;  // the longest piece: the text, normalized, plus a prefix space
  size_t scratch, merge, nfc_work, nfc_out, total;
  WorkspaceLayout(size_t size, bool nfc) {
    piece = (nfc ? unicode::NfcOutputBytes(size) : size) + 1;
    scratch = AlignUp(piece, 4);
    merge = AlignUp(bpe::BpeMerger::WorkspaceBytes(piece), 4);
    nfc_work = nfc ? unicode::NfcWorkCodePoints(size) * sizeof(uint32_t) : 0;
    nfc_out = nfc ? unicode::NfcOutputBytes(size) : 0;
    total = 3 + scratch + merge + nfc_work + nfc_out;  // 3: to align the start
  }
};

}  // namespace

size_t BpeTokenizer::EncodeWorkspaceBytes(size_t size) const {
  if (size > MaxTextBytes()) return SIZE_MAX;
  return WorkspaceLayout(size, nfc_).total;
}

int32_t BpeTokenizer::FindByBytes(const uint8_t* bytes, size_t size) const {
  const auto* by_bytes = table_->vocab_by_bytes();
  if (by_bytes == nullptr) return -1;
  const auto* offsets = table_->token_offsets();
  const uint8_t* all = table_->token_bytes()->data();
  size_t lo = 0, hi = by_bytes->size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const int32_t id = by_bytes->Get(static_cast<uint32_t>(mid));
    const uint32_t begin = offsets->Get(id);
    const int c = CompareBytes(all + begin, offsets->Get(id + 1) - begin, bytes, size);
    if (c == 0) return id;
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return -1;
}

Status BpeTokenizer::EncodeInto(const uint8_t* text, size_t size, const BpeEncodeOptions& options,
                                bpe::IdWriter* out, Span<uint8_t> workspace) const {
  if (table_ == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  }
  if (size > MaxTextBytes()) {
    return Status::Error(StatusCode::kOutOfRange,
                         "tokenizer: a text of %zu bytes, at most %zu are taken at once", size,
                         MaxTextBytes());
  }
  const int64_t bad = FindInvalidUtf8(reinterpret_cast<const char*>(text), size);
  if (bad >= 0) {
    return Status::Error(StatusCode::kInvalidArgument, "input is not valid UTF-8 (byte %lld)",
                         static_cast<long long>(bad));
  }
  if (workspace.size() < EncodeWorkspaceBytes(size)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "tokenizer: a workspace of %zu bytes, %zu needed for %zu bytes of text",
                         workspace.size(), EncodeWorkspaceBytes(size), size);
  }
  const WorkspaceLayout layout(size, nfc_);
  uint8_t* at = workspace.data() + (4 - reinterpret_cast<uintptr_t>(workspace.data()) % 4) % 4;
  const Span<uint8_t> scratch(at, layout.piece);
  const Span<uint8_t> merge(at + layout.scratch, layout.merge);
  at += layout.scratch + layout.merge;
  const Span<uint32_t> nfc_work(reinterpret_cast<uint32_t*>(at),
                                layout.nfc_work / sizeof(uint32_t));
  const Span<uint8_t> nfc_out(at + layout.nfc_work, layout.nfc_out);
  if (options.add_special_tokens && table_->prefix_ids()) {
    for (const int32_t id : *table_->prefix_ids()) out->Push(id);
  }
  BpeEncoding encoding(*this, options, out, scratch, merge, nfc_work, nfc_out);
  TERN_RETURN_IF_ERROR(encoding.Run(text, size));
  if (options.add_special_tokens && table_->suffix_ids()) {
    for (const int32_t id : *table_->suffix_ids()) out->Push(id);
  }
  return Status::Ok();
}

Status BpeTokenizer::Encode(const char* text, size_t size, const BpeEncodeOptions& options,
                            Span<int32_t> ids, size_t* count, Span<uint8_t> workspace) const {
  bpe::IdWriter out{ids.data(), ids.size(), 0};
  const Status s =
      EncodeInto(reinterpret_cast<const uint8_t*>(text), size, options, &out, workspace);
  *count = out.count;
  if (!s.ok()) return s;
  if (out.count > ids.size()) {
    return Status::Error(StatusCode::kOutOfRange, "tokenizer: %zu ids, room for %zu", out.count,
                         ids.size());
  }
  return Status::Ok();
}

Status BpeTokenizer::Encode(const std::string& text, const BpeEncodeOptions& options,
                            std::vector<int32_t>* ids) const {
  ids->clear();
  if (text.size() > MaxTextBytes()) {
    return Status::Error(StatusCode::kOutOfRange,
                         "tokenizer: a text of %zu bytes, at most %zu are taken at once",
                         text.size(), MaxTextBytes());
  }
  std::vector<uint8_t> workspace(EncodeWorkspaceBytes(text.size()));
  // About one id per byte; a prefix space per piece can make it more, and then the count
  // says how many, for a second try.
  const size_t extra = (table_ && table_->prefix_ids() ? table_->prefix_ids()->size() : 0) +
                       (table_ && table_->suffix_ids() ? table_->suffix_ids()->size() : 0);
  ids->resize(text.size() + extra);
  size_t count = 0;
  Status s = Encode(text.data(), text.size(), options, Span<int32_t>(ids->data(), ids->size()),
                    &count, Span<uint8_t>(workspace.data(), workspace.size()));
  if (s.code() == StatusCode::kOutOfRange && count > ids->size()) {
    ids->resize(count);
    s = Encode(text.data(), text.size(), options, Span<int32_t>(ids->data(), ids->size()), &count,
               Span<uint8_t>(workspace.data(), workspace.size()));
  }
  ids->resize(s.ok() ? count : 0);
  return s;
}

Status BpeTokenizer::TokenBytes(int32_t id, Span<const uint8_t>* bytes) const {
  if (table_ == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "tokenizer not loaded");
  }
  if (id < 0 || id >= vocab_size_) {
    return Status::Error(StatusCode::kOutOfRange, "id %d is outside the tokenizer's %d tokens", id,
                         vocab_size_);
  }
  const auto* offsets = table_->token_offsets();
  const uint32_t begin = offsets->Get(id);
  *bytes = Span<const uint8_t>(table_->token_bytes()->data() + begin, offsets->Get(id + 1) - begin);
  return Status::Ok();
}

Status BpeTokenizer::Decode(Span<const int32_t> ids, bool skip_special, std::string* bytes) const {
  for (const int32_t id : ids) {
    Span<const uint8_t> b;
    TERN_RETURN_IF_ERROR(TokenBytes(id, &b));
    if (skip_special && IsSpecial(id)) continue;
    bytes->append(reinterpret_cast<const char*>(b.data()), b.size());
  }
  return Status::Ok();
}

}  // namespace tern
