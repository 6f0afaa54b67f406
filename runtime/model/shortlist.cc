#include "runtime/model/shortlist.h"

#include <algorithm>

#include "tern_generated.h"

namespace tern {

int64_t ShortlistTable::MaxCandidates(int64_t source_tokens, int64_t specials,
                                      int64_t tgt_vocab) const {
  const int64_t n = f() + int64_t{k} * source_tokens + specials;
  return std::min(n, tgt_vocab);
}

int ShortlistSpecials(const ModelConfig& c, int32_t out[kMaxShortlistSpecials]) {
  const int32_t ids[kMaxShortlistSpecials] = {c.pad_id, c.bos_id, c.eos_id, c.unk_id,
                                              c.decoder_start_id};
  int n = 0;
  for (int32_t id : ids) {
    if (id < 0 || id >= c.tgt_vocab_size) continue;
    int at = n;
    while (at > 0 && out[at - 1] > id) --at;
    if (at > 0 && out[at - 1] == id) continue;
    for (int i = n; i > at; --i) out[i] = out[i - 1];
    out[at] = id;
    ++n;
  }
  return n;
}

Status ReadShortlist(const schema::Shortlist* table, int32_t src_vocab, int32_t tgt_vocab,
                     ShortlistTable* out) {
  *out = ShortlistTable();
  if (table == nullptr) return Status::Ok();
  const auto* frequent = table->frequent();
  const auto* offsets = table->row_offsets();
  const auto* ids = table->ids();
  const int32_t k = table->k();
  if (k < 0 || k > tgt_vocab) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist.k = %d is outside [0, tgt_vocab_size %d]", k, tgt_vocab);
  }
  const uint32_t f = frequent ? frequent->size() : 0;
  if (f > static_cast<uint32_t>(tgt_vocab)) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist.frequent has %u ids, more than tgt_vocab_size %d", f,
                         tgt_vocab);
  }
  if (k == 0 && f == 0) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist has k = 0 and no frequent ids: it would allow no token");
  }
  for (uint32_t i = 0; i < f; ++i) {
    const int32_t id = frequent->Get(i);
    if (id < 0 || id >= tgt_vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "shortlist.frequent[%u] = %d is outside tgt_vocab_size %d", i, id,
                           tgt_vocab);
    }
  }
  const uint32_t want = static_cast<uint32_t>(src_vocab) + 1;
  if (offsets == nullptr || offsets->size() != want) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist.row_offsets has %u entries, expected src_vocab_size + 1 = %u",
                         offsets ? offsets->size() : 0u, want);
  }
  const uint32_t id_count = ids ? ids->size() : 0;
  if (offsets->Get(0) != 0) {
    return Status::Error(StatusCode::kInvalidModel, "shortlist.row_offsets[0] = %u, expected 0",
                         offsets->Get(0));
  }
  for (uint32_t s = 0; s + 1 < want; ++s) {
    const uint32_t begin = offsets->Get(s), end = offsets->Get(s + 1);
    if (end < begin || end > id_count) {
      return Status::Error(StatusCode::kInvalidModel,
                           "shortlist.row_offsets[%u] = %u is not in [%u, %u] (ids has %u)", s + 1,
                           end, begin, id_count, id_count);
    }
    if (end - begin > static_cast<uint32_t>(k)) {
      return Status::Error(StatusCode::kInvalidModel,
                           "shortlist row of source token %u has %u ids, more than k = %d", s,
                           end - begin, k);
    }
  }
  if (offsets->Get(want - 1) != id_count) {
    return Status::Error(StatusCode::kInvalidModel,
                         "shortlist.row_offsets ends at %u, but ids has %u entries",
                         offsets->Get(want - 1), id_count);
  }
  for (uint32_t i = 0; i < id_count; ++i) {
    const int32_t id = ids->Get(i);
    if (id < 0 || id >= tgt_vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "shortlist.ids[%u] = %d is outside tgt_vocab_size %d", i, id, tgt_vocab);
    }
  }
  out->k = k;
  out->frequent = Span<const int32_t>(frequent ? frequent->data() : nullptr, f);
  out->row_offsets = Span<const uint32_t>(offsets->data(), offsets->size());
  out->ids = Span<const int32_t>(ids ? ids->data() : nullptr, id_count);
  return Status::Ok();
}

}  // namespace tern
