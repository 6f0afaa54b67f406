#include "tools/tern/convert_shortlist.h"

#include <cstdio>
#include <fstream>

#include "converter/error.h"
#include "converter/quality.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tern::cli {

std::vector<convert::IdSequence> EncodeLines(const std::string& path,
                                             const std::vector<uint8_t>& spm, bool append_eos,
                                             int32_t eos_id) {
  Tokenizer tokenizer;
  Status s = tokenizer.Load(Span<const uint8_t>(spm.data(), spm.size()));
  if (!s.ok()) throw convert::Error("tokenizer: " + std::string(s.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw convert::Error(path + ": cannot open");
  std::vector<convert::IdSequence> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.emplace_back();
    if (line.empty()) continue;
    s = tokenizer.Encode(line, append_eos, eos_id, &out.back());
    if (!s.ok()) {
      throw convert::Error(path + ":" + std::to_string(out.size()) + ": " + s.message());
    }
  }
  return out;
}

namespace {

std::vector<int32_t> SpecialIds(const ModelConfig& c) {
  return {c.pad_id, c.bos_id, c.eos_id, c.unk_id, c.decoder_start_id};
}

bool IdFile(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".ids") == 0;
}

// Both sides of parallel text, encoded with the model's tokenizers (no EOS: the runtime adds
// the special ids to every shortlist), or, for files named *.ids, token ids already.
void EncodePair(const std::vector<std::string>& paths, const convert::TernContents& contents,
                std::vector<convert::IdSequence>* source,
                std::vector<convert::IdSequence>* target) {
  if (IdFile(paths[0]) && IdFile(paths[1])) {
    *source = convert::ReadIdLines(paths[0]);
    *target = convert::ReadIdLines(paths[1]);
    if (source->size() != target->size()) {
      throw convert::Error(paths[0] + " has " + std::to_string(source->size()) + " lines, " +
                           paths[1] + " has " + std::to_string(target->size()) +
                           ": parallel text needs one line per sentence on both sides");
    }
    return;
  }
  if (contents.source_tokenizer.empty()) {
    throw convert::Error(
        "a shortlist from parallel text needs the model's SentencePiece tokenizer (--tokenizer)");
  }
  const auto& tgt_spm =
      contents.target_tokenizer.empty() ? contents.source_tokenizer : contents.target_tokenizer;
  *source = EncodeLines(paths[0], contents.source_tokenizer, false, contents.config.eos_id);
  *target = EncodeLines(paths[1], tgt_spm, false, contents.config.eos_id);
  if (source->size() != target->size()) {
    throw convert::Error(paths[0] + " has " + std::to_string(source->size()) + " lines, " +
                         paths[1] + " has " + std::to_string(target->size()) +
                         ": parallel text needs one line per sentence on both sides");
  }
}

}  // namespace

ShortlistRequest ParseShortlistRequest(const Args& args, std::vector<std::string> corpus,
                                       std::vector<std::string> held_out) {
  ShortlistRequest r;
  r.corpus = std::move(corpus);
  r.held_out = std::move(held_out);
  r.file = args.get("shortlist");
  r.write = args.get("write-shortlist");
  if (args.has("shortlist") && r.file.empty()) throw UsageError("--shortlist is empty");
  if (!r.corpus.empty() && !r.file.empty())
    throw UsageError("--shortlist-corpus and --shortlist exclude each other");
  for (const char* o : {"shortlist-k", "shortlist-f", "shortlist-score"}) {
    if (args.has(o) && r.corpus.empty())
      throw UsageError(std::string("--") + o + " needs --shortlist-corpus");
  }
  if (args.has("shortlist-ids")) {
    if (!r.wanted()) throw UsageError("--shortlist-ids needs --shortlist-corpus or --shortlist");
    const std::string ids = args.get("shortlist-ids");
    if (ids != "16" && ids != "32")
      throw UsageError("--shortlist-ids must be 16 or 32, not '" + ids + "'");
    r.wide_ids = ids == "32";
  }
  if ((!r.write.empty() || !r.held_out.empty()) && !r.wanted())
    throw UsageError(
        "--write-shortlist and --shortlist-eval need --shortlist-corpus or --shortlist");
  r.k = args.get_int("shortlist-k", r.k, 0, 1 << 24);
  r.f = args.get_int("shortlist-f", r.f, 0, 1 << 24);
  if (r.k == 0 && r.f == 0)
    throw UsageError("--shortlist-k 0 with --shortlist-f 0 would allow no token");
  r.score = args.get("shortlist-score", r.score);
  try {
    convert::ParseLexicalScore(r.score);
  } catch (const convert::Error& e) {
    throw UsageError(std::string("--shortlist-score: ") + e.what());
  }
  return r;
}

void AddShortlist(const ShortlistRequest& request, bool quiet, convert::TernContents* contents) {
  if (!request.wanted()) return;
  contents->shortlist_wide_ids = request.wide_ids;
  const ModelConfig& c = contents->config;
  if (c.architecture == Architecture::kDecoderOnly) {
    throw convert::Error("a shortlist needs a source sentence: this is a decoder-only model");
  }
  if (!request.file.empty()) {
    contents->shortlist =
        convert::ReadShortlistText(request.file, c.src_vocab_size, c.tgt_vocab_size);
    contents->inputs.push_back(request.file);
  } else {
    std::vector<convert::IdSequence> source, target;
    EncodePair(request.corpus, *contents, &source, &target);
    convert::ShortlistOptions options;
    options.k = request.k;
    options.f = request.f;
    options.score = convert::ParseLexicalScore(request.score);
    options.special_ids = SpecialIds(c);
    contents->shortlist =
        convert::BuildShortlist(source, target, c.src_vocab_size, c.tgt_vocab_size, options);
    contents->inputs.insert(contents->inputs.end(), request.corpus.begin(), request.corpus.end());
  }
  if (!quiet) {
    std::fprintf(stderr, "note: shortlist: K %d, F %zu, %zu ids in %zu source rows\n",
                 contents->shortlist->k, contents->shortlist->frequent.size(),
                 contents->shortlist->ids.size(), contents->shortlist->row_offsets.size() - 1);
  }
}

void ReportShortlist(const ShortlistRequest& request, const convert::TernContents& contents) {
  if (request.held_out.empty() || !contents.shortlist) return;
  std::vector<convert::IdSequence> source, target;
  EncodePair(request.held_out, contents, &source, &target);
  const convert::ShortlistCoverage r =
      convert::MeasureCoverage(*contents.shortlist, source, target, SpecialIds(contents.config));
  std::printf(
      "shortlist recall on %zu held-out sentences: %.4f of reference tokens inside the "
      "candidates; candidates per sentence: mean %.1f, max %zu (of %d)\n",
      r.sentences, r.recall, r.mean_candidates, r.max_candidates, contents.config.tgt_vocab_size);
}

}  // namespace tern::cli
