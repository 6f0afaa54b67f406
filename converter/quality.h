// The quality report of `tern convert --report`: the fp32 model and the converted
// (quantized) model, both built in memory and run with the runtime on the same sources.
//
//   token agreement      greedy ids of the two models, compared position by position over the
//                        longer of the two outputs; and sentences whose ids are identical
//   logit error          along the fp32 model's greedy path (teacher forcing both models with the
//                        fp32 output), max and mean |logit_fp32 - logit_quantized| over every
//                        vocabulary entry of every step; and how often the top-1 token agrees
//   BLEU (--references)  corpus BLEU-4 of each model's greedy ids against the reference ids:
//                        Papineni et al. 2002, uniform weights, brevity penalty, one reference,
//                        no smoothing, the ids themselves as tokens (no detokenization)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converter/writer.h"

namespace tern::convert {

using IdSequence = std::vector<int32_t>;

struct QualityReport {
  size_t sentences = 0;
  size_t identical = 0;
  size_t positions = 0;
  size_t agreeing = 0;
  size_t steps = 0;  // teacher-forced decoder steps compared
  size_t top1_agreeing = 0;
  double max_abs_logit_error = 0;
  double mean_abs_logit_error = 0;
  bool has_bleu = false;
  double bleu_reference = 0;  // the fp32 model
  double bleu_converted = 0;
  std::string label;  // e.g. "int8"

  std::string Format() const;
};

// Space-separated ids per line (empty lines are kept as empty sequences). Errors name the file
// and line.
std::vector<IdSequence> ReadIdLines(const std::string& path);

// Runs both models. Empty sources are skipped (with their references). max_length: decoder
// steps per sentence (0: min(256, max_positions)).
QualityReport CompareModels(const TernContents& reference, const TernContents& converted,
                            const std::vector<IdSequence>& sources,
                            const std::vector<IdSequence>& references, int32_t max_length);

// Corpus BLEU-4 in [0, 100] as described above; hypotheses and references pair up by index.
double CorpusBleu(const std::vector<IdSequence>& hypotheses,
                  const std::vector<IdSequence>& references);

}  // namespace tern::convert
