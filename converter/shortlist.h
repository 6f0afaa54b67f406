// The vocabulary shortlist (schema table Shortlist, format 1.5): built from a parallel corpus
// tokenized with the model's own tokenizers, or read from a shortlist text file.
//
// Per source token the K target tokens most likely in its translation, scored by a lexical
// translation table: IBM model 1 (Brown et al. 1993, EM over t(target | source) with a NULL
// source word, as fast_align without its diagonal prior) or sentence co-occurrence scored by
// Dunning's log-likelihood ratio. Rows leave out the F frequent tokens and the special ids,
// which every sentence gets anyway. docs/shortlist.md has the measurement behind the defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::convert {

using IdSequence = std::vector<int32_t>;

struct ShortlistData {
  int32_t k = 0;
  int32_t tgt_vocab = 0;  // the target vocabulary it was built for (source: row_offsets - 1)
  std::vector<int32_t> frequent;
  std::vector<uint32_t> row_offsets;  // src_vocab + 1 entries
  std::vector<int32_t> ids;
};

enum class LexicalScore { kIbm1, kLogLikelihood };

struct ShortlistOptions {
  int64_t k = 0;
  int64_t f = 0;
  LexicalScore score = LexicalScore::kIbm1;
  int iterations = 5;                // IBM model 1 EM iterations
  std::vector<int32_t> special_ids;  // never in a row or in `frequent` (always candidates)
};

// Throws Error naming the problem: line counts differ, an empty corpus, k = f = 0, k or f
// larger than the target vocabulary, an id outside a vocabulary.
ShortlistData BuildShortlist(const std::vector<IdSequence>& source,
                             const std::vector<IdSequence>& target, int32_t src_vocab,
                             int32_t tgt_vocab, const ShortlistOptions& options);

LexicalScore ParseLexicalScore(const std::string& name);  // ibm1 | llr

// A sentence's candidates: frequent + each distinct source token's row + specials, sorted.
std::vector<int32_t> Candidates(const ShortlistData& shortlist, const IdSequence& source,
                                const std::vector<int32_t>& special_ids);

// How well a shortlist covers held-out reference translations.
struct ShortlistCoverage {
  double recall = 0;           // reference tokens inside their sentence's candidates
  double mean_candidates = 0;  // per sentence
  size_t max_candidates = 0;
  size_t sentences = 0;
};
ShortlistCoverage MeasureCoverage(const ShortlistData& shortlist,
                                  const std::vector<IdSequence>& source,
                                  const std::vector<IdSequence>& target,
                                  const std::vector<int32_t>& special_ids);

// The text form (`tern convert --shortlist FILE`, `--write-shortlist FILE`): a small file that
// can be committed beside a checkpoint instead of its training corpus.
//   tern-shortlist 2
//   vocab SRC_VOCAB TGT_VOCAB      the vocabularies it was built for: a table of ids is
//                                  meaningless under another tokenizer, so a model whose sizes
//                                  differ refuses it (version 1 files, without it, still read)
//   k K
//   frequent ID ID ...
//   SOURCE_ID<TAB>ID ID ...        one line per non-empty row, source ids ascending
std::string ShortlistText(const ShortlistData& shortlist);
ShortlistData ReadShortlistText(const std::string& path, int32_t src_vocab, int32_t tgt_vocab);

}  // namespace tern::convert
