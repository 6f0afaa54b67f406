#include "converter/quality.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "converter/error.h"
#include "runtime/api/session_internal.h"
#include "tern/tern.hpp"

namespace tern::convert {

namespace {

// A model serialized and loaded from a 64-byte aligned buffer, with a session prepared.
class Runner {
 public:
  Runner(const TernContents& contents, const std::string& what, int32_t max_source,
         int32_t max_target) {
    const std::vector<uint8_t> bytes = SerializeModel(contents);
    storage_.resize(bytes.size() + 64);
    const size_t shift = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
    std::copy(bytes.begin(), bytes.end(), storage_.begin() + static_cast<std::ptrdiff_t>(shift));
    auto model = Model::Load(storage_.data() + shift, bytes.size());
    if (!model.ok())
      throw Error("quality report: the " + what +
                  " model does not load: " + model.status().message());
    model_ = model.value();
    Limits limits;
    limits.max_source_length = max_source;
    limits.max_target_length = max_target;
    auto need = Session::RequiredArenaBytes(model_, limits);
    if (!need.ok()) throw Error("quality report: " + what + ": " + need.status().message());
    arena_.resize(need.value());
    Status s = session_.Prepare(model_, limits, arena_.data(), arena_.size());
    if (!s.ok()) throw Error("quality report: " + what + ": " + s.message());
    // The report measures quantization over every target token's logit; the shortlist's
    // effect is --shortlist-eval's.
    ed().UseShortlist(false);
  }

  EncoderDecoder& ed() { return tern::internal::encoder_decoder(session_); }

  void Encode(const IdSequence& src, size_t line) {
    const int32_t length = static_cast<int32_t>(src.size());
    Status s = ed().Encode(src.data(), length, &length, 1);
    if (!s.ok())
      throw Error("quality report: source line " + std::to_string(line) + ": " + s.message());
  }

  const float* Step(int32_t token) {
    const float* logits = nullptr;
    Status s = ed().DecodeStep(&token, &logits);
    if (!s.ok()) throw Error(std::string("quality report: decode step: ") + s.message());
    return logits;
  }

 private:
  std::vector<uint8_t> storage_;
  Model model_;
  std::vector<uint8_t> arena_;
  Session session_;
};

int32_t Argmax(const float* x, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

// Greedy per docs/CONVENTIONS.md: start token, argmax (lowest id on ties), stop after EOS.
IdSequence Greedy(Runner& r, const IdSequence& src, size_t line, int32_t max_length) {
  const ModelConfig& c = r.ed().config();
  r.Encode(src, line);
  IdSequence out;
  int32_t token = c.decoder_start_id;
  for (int32_t step = 0; step < max_length; ++step) {
    token = Argmax(r.Step(token), c.tgt_vocab_size);
    if (token == c.eos_id) break;
    out.push_back(token);
  }
  return out;
}

}  // namespace

std::vector<IdSequence> ReadIdLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  std::vector<IdSequence> lines;
  std::string line;
  while (std::getline(in, line)) {
    IdSequence ids;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      errno = 0;
      char* end = nullptr;
      const long v = std::strtol(word.c_str(), &end, 10);
      if (errno || *end != '\0' || v < 0 || v > INT32_MAX) {
        throw Error(path + ": line " + std::to_string(lines.size() + 1) + ": \"" + word +
                    "\" is not a token id");
      }
      ids.push_back(static_cast<int32_t>(v));
    }
    lines.push_back(std::move(ids));
  }
  return lines;
}

double CorpusBleu(const std::vector<IdSequence>& hypotheses,
                  const std::vector<IdSequence>& references) {
  double matches[4] = {0, 0, 0, 0}, totals[4] = {0, 0, 0, 0};
  double hyp_length = 0, ref_length = 0;
  for (size_t s = 0; s < hypotheses.size() && s < references.size(); ++s) {
    const IdSequence& h = hypotheses[s];
    const IdSequence& r = references[s];
    hyp_length += static_cast<double>(h.size());
    ref_length += static_cast<double>(r.size());
    for (size_t n = 1; n <= 4; ++n) {
      std::map<IdSequence, int> ref_counts;
      for (size_t i = 0; i + n <= r.size(); ++i)
        ++ref_counts[IdSequence(r.begin() + i, r.begin() + i + n)];
      std::map<IdSequence, int> hyp_counts;
      for (size_t i = 0; i + n <= h.size(); ++i)
        ++hyp_counts[IdSequence(h.begin() + i, h.begin() + i + n)];
      for (const auto& kv : hyp_counts) {
        auto it = ref_counts.find(kv.first);
        matches[n - 1] += it == ref_counts.end() ? 0 : std::min(kv.second, it->second);
        totals[n - 1] += kv.second;
      }
    }
  }
  double log_precision = 0;
  for (int n = 0; n < 4; ++n) {
    if (matches[n] == 0 || totals[n] == 0) return 0.0;
    log_precision += std::log(matches[n] / totals[n]) / 4.0;
  }
  const double brevity =
      hyp_length < ref_length ? std::exp(1.0 - ref_length / std::max(hyp_length, 1.0)) : 1.0;
  return 100.0 * brevity * std::exp(log_precision);
}

QualityReport CompareModels(const TernContents& reference, const TernContents& converted,
                            const std::vector<IdSequence>& sources,
                            const std::vector<IdSequence>& references, int32_t max_length) {
  const ModelConfig& c = reference.config;
  if (max_length <= 0) max_length = std::min(256, c.max_positions);
  if (!references.empty() && references.size() != sources.size()) {
    throw Error("quality report: " + std::to_string(sources.size()) + " source lines but " +
                std::to_string(references.size()) + " reference lines");
  }
  int32_t max_source = 1;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (static_cast<int64_t>(sources[i].size()) > c.max_positions) {
      throw Error("quality report: source line " + std::to_string(i + 1) + " has " +
                  std::to_string(sources[i].size()) + " ids; the model's max_positions is " +
                  std::to_string(c.max_positions));
    }
    max_source = std::max(max_source, static_cast<int32_t>(sources[i].size()));
  }
  Runner fp32(reference, "fp32", max_source, max_length);
  Runner quant(converted, "converted", max_source, max_length);
  QualityReport report;
  std::vector<IdSequence> hyp_fp32, hyp_quant, refs;
  double sum_error = 0;
  double count_error = 0;
  for (size_t line = 0; line < sources.size(); ++line) {
    const IdSequence& src = sources[line];
    if (src.empty()) continue;
    ++report.sentences;
    const IdSequence a = Greedy(fp32, src, line + 1, max_length);
    const IdSequence b = Greedy(quant, src, line + 1, max_length);
    if (a == b) ++report.identical;
    const size_t longer = std::max(a.size(), b.size());
    report.positions += longer;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) report.agreeing += a[i] == b[i];
    // Teacher forcing both with the fp32 path: start, then a's ids (the last step is where fp32
    // chose EOS, unless it ran to max_length).
    fp32.Encode(src, line + 1);
    quant.Encode(src, line + 1);
    const size_t steps = std::min(a.size() + 1, static_cast<size_t>(max_length));
    for (size_t t = 0; t < steps; ++t) {
      const int32_t token = t == 0 ? c.decoder_start_id : a[t - 1];
      const float* la = fp32.Step(token);
      const float* lb = quant.Step(token);
      for (int32_t v = 0; v < c.tgt_vocab_size; ++v) {
        const double e = std::fabs(static_cast<double>(la[v]) - lb[v]);
        report.max_abs_logit_error = std::max(report.max_abs_logit_error, e);
        sum_error += e;
      }
      count_error += c.tgt_vocab_size;
      report.top1_agreeing += Argmax(la, c.tgt_vocab_size) == Argmax(lb, c.tgt_vocab_size);
      ++report.steps;
    }
    hyp_fp32.push_back(a);
    hyp_quant.push_back(b);
    if (!references.empty()) refs.push_back(references[line]);
  }
  report.mean_abs_logit_error = count_error > 0 ? sum_error / count_error : 0;
  if (!references.empty()) {
    report.has_bleu = true;
    report.bleu_reference = CorpusBleu(hyp_fp32, refs);
    report.bleu_converted = CorpusBleu(hyp_quant, refs);
  }
  return report;
}

std::string QualityReport::Format() const {
  auto pct = [](size_t a, size_t b) {
    return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 100.0;
  };
  char buf[1024];
  int n = std::snprintf(
      buf, sizeof buf,
      "quality report: %s vs fp32, %zu sentences\n"
      "  greedy ids: %zu/%zu sentences identical, token agreement %.2f%% (%zu/%zu positions)\n"
      "  along the fp32 path (%zu steps): max |logit error| %.6g, mean %.6g, top-1 agreement "
      "%.2f%%\n",
      label.c_str(), sentences, identical, sentences, pct(agreeing, positions), agreeing, positions,
      steps, max_abs_logit_error, mean_abs_logit_error, pct(top1_agreeing, steps));
  if (has_bleu && n > 0 && static_cast<size_t>(n) < sizeof buf) {
    std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n),
                  "  BLEU-4 on ids vs references: fp32 %.2f, %s %.2f\n", bleu_reference,
                  label.c_str(), bleu_converted);
  }
  return buf;
}

}  // namespace tern::convert
