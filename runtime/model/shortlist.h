// The vocabulary shortlist stored in a .tern file (format 1.5, schema table Shortlist): per
// source token the K target tokens most likely in its translation, plus the F most frequent
// target tokens. A view of the file's vectors, checked by Model::Load; nothing is copied.
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
  Span<const int32_t> ids;           // the rows' target ids

  bool present() const { return !row_offsets.empty(); }
  int64_t f() const { return static_cast<int64_t>(frequent.size()); }
  Span<const int32_t> row(int32_t source_id) const {
    const uint32_t begin = row_offsets[static_cast<size_t>(source_id)];
    return ids.subspan(begin, row_offsets[static_cast<size_t>(source_id) + 1] - begin);
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
// consistent, each row at most k ids, k + F > 0). An absent table gives an empty view.
Status ReadShortlist(const schema::Shortlist* table, int32_t src_vocab, int32_t tgt_vocab,
                     ShortlistTable* out);

}  // namespace tern
