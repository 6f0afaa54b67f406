// The vocabulary shortlist stored in a .tern file (format 1.5, schema table Shortlist; 1.11:
// Model.compact_shortlist, the same with 16-bit ids): per source token the K target tokens most
// likely in its translation, plus the F most frequent target tokens. A view of the file's
// vectors, checked by Model::Load; nothing is copied.
#pragma once

#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/status.h"
#include "runtime/model/config.h"

namespace tern {

namespace schema {
struct Shortlist;
}  // namespace schema

struct ShortlistTable {
  int32_t k = 0;                     // the most ids any source token's row holds
  Span<const int32_t> frequent;      // F ids, candidates of every sentence
  Span<const uint32_t> row_offsets;  // src_vocab + 1 entries; empty: the file has no shortlist
  Span<const int32_t> ids;           // the rows' target ids (format 1.5)
  Span<const uint16_t> ids16;        // or the same as 16-bit ids (1.11); one of the two is empty

  bool present() const { return !row_offsets.empty(); }
  int64_t f() const { return static_cast<int64_t>(frequent.size()); }
  size_t id_count() const { return ids16.empty() ? ids.size() : ids16.size(); }
  int id_bytes() const { return ids16.empty() ? 4 : 2; }  // per stored row id
  // How many ids source token `source_id`'s row holds, and its i-th.
  uint32_t row_size(int32_t source_id) const {
    return row_offsets[static_cast<size_t>(source_id) + 1] -
           row_offsets[static_cast<size_t>(source_id)];
  }
  int32_t row_id(int32_t source_id, uint32_t i) const {
    const size_t at = row_offsets[static_cast<size_t>(source_id)] + i;
    return ids16.empty() ? ids[at] : static_cast<int32_t>(ids16[at]);
  }
  // Calls f(id) for each id of the row, most likely first.
  template <typename F>
  void ForEachInRow(int32_t source_id, F&& f) const {
    const size_t begin = row_offsets[static_cast<size_t>(source_id)];
    const size_t end = row_offsets[static_cast<size_t>(source_id) + 1];
    if (ids16.empty()) {
      for (size_t i = begin; i < end; ++i) f(ids[i]);
    } else {
      for (size_t i = begin; i < end; ++i) f(static_cast<int32_t>(ids16[i]));
    }
  }
  // The most candidates a sentence of `source_tokens` tokens can have, with `specials` special
  // ids, before padding: F + K per token + specials, at most the vocabulary.
  int64_t MaxCandidates(int64_t source_tokens, int64_t specials, int64_t tgt_vocab) const;
};

// The special ids every sentence's candidates hold (pad, bos, eos, unk, decoder_start),
// distinct and ascending, in out; returns how many (at most kMaxShortlistSpecials).
inline constexpr int kMaxShortlistSpecials = 5;
int ShortlistSpecials(const ModelConfig& config, int32_t out[kMaxShortlistSpecials]);

// Reads and checks the table against the vocabularies (every id inside them, offsets
// consistent, each row at most k ids, k + F > 0). `compact`: the table is
// Model.compact_shortlist, whose ids are in ids16 (and ids must be empty); otherwise
// Model.shortlist, whose ids16 must be empty. An absent table gives an empty view.
Status ReadShortlist(const schema::Shortlist* table, bool compact, int32_t src_vocab,
                     int32_t tgt_vocab, ShortlistTable* out);

}  // namespace tern
