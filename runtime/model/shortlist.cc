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

Status ReadShortlist(const schema::Shortlist* table, bool compact, int32_t src_vocab,
                     int32_t tgt_vocab, ShortlistTable* out) {
  *out = ShortlistTable();
  if (table == nullptr) return Status::Ok();
  // Messages name the field as the file has it: shortlist.ids or compact_shortlist.ids16.
  const char* name = compact ? "compact_shortlist" : "shortlist";
  const char* ids_name = compact ? "ids16" : "ids";
  const auto* frequent = table->frequent();
  const auto* offsets = table->row_offsets();
  const auto* ids = table->ids();
  const auto* ids16 = table->ids16();
  const int32_t k = table->k();
  if (compact ? (ids != nullptr && ids->size() != 0) : (ids16 != nullptr && ids16->size() != 0)) {
    return Status::Error(StatusCode::kInvalidModel, "%s.%s is set: it holds its ids in %s only",
                         name, compact ? "ids" : "ids16", ids_name);
  }
  if (k < 0 || k > tgt_vocab) {
    return Status::Error(StatusCode::kInvalidModel, "%s.k = %d is outside [0, tgt_vocab_size %d]",
                         name, k, tgt_vocab);
  }
  const uint32_t f = frequent ? frequent->size() : 0;
  if (f > static_cast<uint32_t>(tgt_vocab)) {
    return Status::Error(StatusCode::kInvalidModel,
                         "%s.frequent has %u ids, more than tgt_vocab_size %d", name, f, tgt_vocab);
  }
  if (k == 0 && f == 0) {
    return Status::Error(StatusCode::kInvalidModel,
                         "%s has k = 0 and no frequent ids: it would allow no token", name);
  }
  for (uint32_t i = 0; i < f; ++i) {
    const int32_t id = frequent->Get(i);
    if (id < 0 || id >= tgt_vocab) {
      return Status::Error(StatusCode::kInvalidModel,
                           "%s.frequent[%u] = %d is outside tgt_vocab_size %d", name, i, id,
                           tgt_vocab);
    }
  }
  const uint32_t want = static_cast<uint32_t>(src_vocab) + 1;
  if (offsets == nullptr || offsets->size() != want) {
    return Status::Error(StatusCode::kInvalidModel,
                         "%s.row_offsets has %u entries, expected src_vocab_size + 1 = %u", name,
                         offsets ? offsets->size() : 0u, want);
  }
  const uint32_t id_count = compact ? (ids16 ? ids16->size() : 0u) : (ids ? ids->size() : 0u);
  if (offsets->Get(0) != 0) {
    return Status::Error(StatusCode::kInvalidModel, "%s.row_offsets[0] = %u, expected 0", name,
                         offsets->Get(0));
  }
  for (uint32_t s = 0; s + 1 < want; ++s) {
    const uint32_t begin = offsets->Get(s), end = offsets->Get(s + 1);
    if (end < begin || end > id_count) {
      return Status::Error(StatusCode::kInvalidModel,
                           "%s.row_offsets[%u] = %u is not in [%u, %u] (%s has %u)", name, s + 1,
                           end, begin, id_count, ids_name, id_count);
    }
    if (end - begin > static_cast<uint32_t>(k)) {
      return Status::Error(StatusCode::kInvalidModel,
                           "%s row of source token %u has %u ids, more than k = %d", name, s,
                           end - begin, k);
    }
  }
  if (offsets->Get(want - 1) != id_count) {
    return Status::Error(StatusCode::kInvalidModel,
                         "%s.row_offsets ends at %u, but %s has %u entries", name,
                         offsets->Get(want - 1), ids_name, id_count);
  }
  for (uint32_t i = 0; i < id_count; ++i) {
    const int32_t id = compact ? static_cast<int32_t>(ids16->Get(i)) : ids->Get(i);
    if (id < 0 || id >= tgt_vocab) {
      return Status::Error(StatusCode::kInvalidModel, "%s.%s[%u] = %d is outside tgt_vocab_size %d",
                           name, ids_name, i, id, tgt_vocab);
    }
  }
  out->k = k;
  out->frequent = Span<const int32_t>(frequent ? frequent->data() : nullptr, f);
  out->row_offsets = Span<const uint32_t>(offsets->data(), offsets->size());
  if (compact) {
    out->ids16 = Span<const uint16_t>(ids16 ? ids16->data() : nullptr, id_count);
  } else {
    out->ids = Span<const int32_t>(ids ? ids->data() : nullptr, id_count);
  }
  return Status::Ok();
}

}  // namespace tern
