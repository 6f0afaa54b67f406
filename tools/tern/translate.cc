// tern translate: stdin lines -> translations on stdout, one line each (empty lines stay empty,
// so outputs align with inputs).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/decoding/greedy.h"
#include "runtime/tokenizer/translation_tokenizer.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/json_string.h"
#include "tools/tern/load.h"
#include "tools/tern/output.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern translate -m MODEL [options] [INPUT] > output\n"
    "\n"
    "Reads one sentence per line from INPUT (default, or \"-\": stdin) and writes its translation\n"
    "to stdout; empty lines stay empty. Text is tokenized with the SentencePiece models stored\n"
    "in MODEL, or its byte-level BPE tokenizer (BART's tokenizer.json: the special tokens its\n"
    "post-processor puts around a text, EOS appended when it adds none; special tokens left out\n"
    "of the output). When stdin is a terminal, it prompts and shows the time per sentence.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model\n"
    "  --ids                 token ids in and out: a line is space-separated source ids (EOS\n"
    "                        included, as the model expects); output ids exclude start and EOS\n"
    "  --batch N             sentences translated together (default 1, at most 4096). With\n"
    "                        N > 1 the input is read --buffer lines at a time, sorted by length\n"
    "                        and cut into batches of similar lengths (less padding); the output\n"
    "                        keeps the input's order\n"
    "  --batch-tokens T      also end a batch before its padded source tokens (sentences x\n"
    "                        longest source) would exceed T (default 0: no token budget); the\n"
    "                        encoder's buffers and cross-attention caches are then planned for T\n"
    "                        tokens instead of --batch x --max-source (tern inspect shows it)\n"
    "  --target-tokens T     also end a batch before sentences x the decoder steps its\n"
    "                        longest-running sentence may take (--max-length, or with\n"
    "                        --max-length-ratio ceil(R x source) + 5) would exceed T (default\n"
    "                        0: no budget); the decoder's self-attention caches are then\n"
    "                        planned for --beam x T positions instead of --batch x --beam x\n"
    "                        --max-length. With --max-length-ratio a batch of short sentences\n"
    "                        needs few positions, so a server can accept long ones without an\n"
    "                        arena sized for a batch of them\n"
    "  --kv-cache fp32|fp16  element type of the K/V caches (default fp32). fp16 halves their\n"
    "                        memory (most of the arena at large --batch / --max-source) and\n"
    "                        what a decoder step reads from them; K and V are rounded to fp16,\n"
    "                        so outputs may differ slightly from fp32's (not for relative\n"
    "                        positions)\n"
    "  --buffer L            lines read ahead and sorted (default 64 x --batch x --workers; 1\n"
    "                        with --batch 1 and one worker)\n"
    "  --max-source N        longest source in tokens incl. EOS (default min(256, max_positions))\n"
    "  --max-length N        longest output in tokens incl. EOS (default min(256, max_positions))\n"
    "  --long error|split    a source longer than --max-source is an error (default) or is\n"
    "                        split into pieces translated one after the other\n"
    "  --beam N              beam search with N hypotheses (default 1: greedy; at most 256)\n"
    "  --n-best K            print the K best translations per line (needs --beam >= K);\n"
    "                        plain output separates them with \" ||| \"\n"
    "  --length-penalty A    beam: rank by score / length^A (default 1.0)\n"
    "  --min-length N        no EOS before N tokens\n"
    "  --max-length-ratio R  stop at ceil(R * source length) + 5 tokens\n"
    "  --no-repeat-ngram N   never repeat an n-gram of N tokens\n"
    "  --repetition-penalty P  > 1 discourages repeated tokens\n"
    "  --forced-bos ID       the decoder's first token after the start token, whatever the model\n"
    "                        predicts (a multilingual model's target-language token, as Hugging\n"
    "                        Face's forced_bos_token_id); not printed; takes one of "
    "--max-length's\n"
    "                        positions; default: the model's forced_bos_id, if any\n"
    "  --source-lang CODE    a multilingual model's source language (NLLB deu_Latn, M2M100 de):\n"
    "                        its token from the file's language table starts every source\n"
    "  --target-lang CODE    the target language: its token is forced first (--forced-bos);\n"
    "                        tern inspect lists the codes\n"
    "  --no-shortlist        score every target token even if the model has a vocabulary\n"
    "                        shortlist (by default each sentence scores only its candidates)\n"
    "  --json                one JSON object per line: line, source, translations (text, ids,\n"
    "                        log_prob: the sum of the token log-probabilities, EOS included;\n"
    "                        normalized_score: log_prob / scored_tokens^length-penalty, what\n"
    "                        beam search ranks by; scored_tokens); a failed line has source and\n"
    "                        error. Invalid UTF-8 in the source is written as U+FFFD, so the\n"
    "                        output is always valid JSON\n"
    "  --threads N           intra-op threads (default 1, at most 256)\n"
    "  --workers W           W sessions translate batches in parallel on W threads (default 1,\n"
    "                        at most 256), sharing one packed copy of the weights: each adds\n"
    "                        only its activation arena. Output order is the input's. For a\n"
    "                        file, --workers 2 beat --threads 2 in every setting measured on 2\n"
    "                        cores (1.5-2.0x one thread against 0.9-1.5x; docs/benchmarks.md,\n"
    "                        \"Threads\"); --threads shortens one sentence's latency\n"
    "  --backend B           auto (default: XNNPACK when built with it), xnnpack or reference\n"
    "  --no-mmap             read MODEL into memory instead of mapping it (a mapped file must not\n"
    "                        be changed in place while it runs; see docs/security.md)\n"
    "\n"
    "When stderr is a terminal (and stdin is not), the lines done so far are shown on it.\n"
    "A line that fails (a bad id, invalid UTF-8, too long) is one line on stderr naming its input\n"
    "line and an empty output line; every other line is still translated, at any --batch.\n"
    "exit status: 0 when every line was translated; 1 when any line failed, or stdout could not\n"
    "be written, or the arena exceeds the machine's memory; 2 for usage errors (each flag is\n"
    "checked before the model is used).\n";

// Space-separated token ids; each must be a source vocabulary id. On a bad word, *error says
// which and the ids are empty.
std::vector<int32_t> ParseIds(const std::string& line, int32_t vocab_size, std::string* error) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  std::string word;
  for (size_t at = 0; in >> word; ++at) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (errno || *end != '\0' || v < INT32_MIN || v > INT32_MAX) {
      *error = "\"" + word + "\" is not a token id";
      return {};
    }
    if (v < 0 || v >= vocab_size) {
      *error = "source token id " + word + " at " + std::to_string(at) +
               " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")";
      return {};
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

// One translated piece: its n_best hypotheses.
struct PieceResult {
  std::vector<std::vector<int32_t>> ids;  // [n_best]
  std::vector<float> log_probs;           // [n_best]: raw sums of log-probabilities
  std::vector<int64_t> lengths;           // [n_best]: scored tokens (EOS included)
};

struct Pending {
  size_t line_number = 0;
  std::string source;
  std::vector<std::vector<int32_t>>
      pieces;  // source pieces (split long input), empty for an empty line
  // [piece]: batches are cut from length-sorted pieces, so a split line's pieces may finish
  // in any order; they are joined in order when the line is written.
  std::vector<PieceResult> results;
  std::vector<std::vector<int32_t>> outputs;  // [n_best]: concatenated over pieces
  std::vector<float> log_probs;               // [n_best]: raw sums, added over pieces
  std::vector<int64_t> lengths;               // [n_best]: scored tokens (EOS included)
  std::string error;                          // non-empty: this line failed
};

// "sentence 0: " is the runtime's name for the only sentence of a one-sentence call; the CLI
// names the input line instead.
std::string WithoutSentencePrefix(const char* message) {
  const std::string m = message;
  const std::string prefix = "sentence 0: ";
  return m.compare(0, prefix.size(), prefix) == 0 ? m.substr(prefix.size()) : m;
}

}  // namespace

int Translate(int argc, char** argv) {
  std::set<std::string> valued = {"model",           "long",
                                  "n-best",          "length-penalty",
                                  "min-length",      "max-length-ratio",
                                  "no-repeat-ngram", "repetition-penalty",
                                  "buffer",          "workers",
                                  "forced-bos",      "source-lang",
                                  "target-lang"};
  for (const char* f : kLimitFlags) valued.insert(f);
  Args args(argc, argv, valued, {"ids", "json", "no-mmap", "no-shortlist", "help"},
            {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args.has("model")) throw UsageError("--model is required");
  if (args.positional().size() > 1) {
    throw UsageError("expected at most one INPUT file (the default is stdin), got " +
                     std::to_string(args.positional().size()));
  }
  const std::string long_mode = args.get("long", "error");
  if (long_mode != "error" && long_mode != "split")
    throw UsageError("option --long must be error or split, got \"" + long_mode + "\"");
  const bool ids_mode = args.has("ids");
  const bool json = args.has("json");
  // Every decoding option is checked once here, each with its own message; the runtime's
  // per-call checks then never fire line by line.
  DecodingOptions options;
  // --beam is the one beam setting: it plans the arena (ParseLimits: limits.beam_size) and is
  // the beam of every call.
  options.beam_size = static_cast<int32_t>(args.get_int("beam", 1, 1, kMaxBeam));
  options.n_best = static_cast<int32_t>(args.get_int("n-best", 1, 1, options.beam_size));
  options.min_length = static_cast<int32_t>(args.get_int("min-length", 0, 0, INT32_MAX));
  options.no_repeat_ngram_size =
      static_cast<int32_t>(args.get_int("no-repeat-ngram", 0, 0, INT32_MAX));
  options.length_penalty = static_cast<float>(args.get_real("length-penalty", 1.0));
  if (!std::isfinite(options.length_penalty))
    throw UsageError("option --length-penalty is too large for a float");
  options.repetition_penalty = static_cast<float>(args.get_real("repetition-penalty", 1.0));
  options.use_shortlist = !args.has("no-shortlist");
  if (!(options.repetition_penalty > 0.0f) || !std::isfinite(options.repetition_penalty)) {
    throw UsageError("option --repetition-penalty must be > 0 (1: off), got " +
                     args.get("repetition-penalty"));
  }
  options.max_length_ratio = static_cast<float>(args.get_real("max-length-ratio", 0.0));
  if (!(options.max_length_ratio >= 0.0f) || !std::isfinite(options.max_length_ratio)) {
    throw UsageError("option --max-length-ratio must be >= 0 (0: off), got " +
                     args.get("max-length-ratio"));
  }
  if (options.max_length_ratio > 0.0f) options.max_length_extra = 5;

  // A named input file is read (never ignored); opened before the model is loaded so that a
  // wrong name fails at once.
  std::ifstream input_file;
  std::istream* input = &std::cin;
  bool input_is_stdin = true;
  if (!args.positional().empty() && args.positional()[0] != "-") {
    const std::string& name = args.positional()[0];
    errno = 0;
    input_file.open(name);
    if (!input_file) {
      throw std::runtime_error(name + ": cannot open (" +
                               (errno ? std::strerror(errno) : "unknown error") + ")");
    }
    input = &input_file;
    input_is_stdin = false;
  }

  LoadedModel loaded = LoadModel(args.get("model"), args.has("no-mmap"));
  const ModelConfig& config = loaded.model.config();
  const Limits limits = ParseLimits(args, config);
  if (args.has("forced-bos")) {
    options.forced_bos_id =
        static_cast<int32_t>(args.get_int("forced-bos", -1, 0, config.tgt_vocab_size - 1));
  }
  // Language codes from the file's language table: the source's first token, the target's
  // forced first token.
  auto language = [&](const char* flag) {
    int32_t token = -1;
    const Status s = loaded.model.LanguageToken(args.get(flag).c_str(), &token);
    if (!s.ok()) throw UsageError(std::string("option --") + flag + ": " + s.message());
    return token;
  };
  const int32_t source_lang = args.has("source-lang") ? language("source-lang") : -1;
  if (args.has("target-lang")) {
    if (args.has("forced-bos")) throw UsageError("give --target-lang or --forced-bos, not both");
    options.forced_bos_id = language("target-lang");
  }
  TranslationTokenizer text_codec;
  if (!ids_mode) {
    const Status s = text_codec.Load(loaded.model);
    if (!s.ok())
      throw std::runtime_error(std::string(s.message()) +
                               " (use --ids, or convert with --tokenizer)");
  }
  const int workers_wanted = static_cast<int>(args.get_int("workers", 1, 1, kMaxThreads));
  // With several workers the sessions share one packed copy of the weights (SharedWeights):
  // the first Prepare packs them, the others reuse them.
  SharedWeights shared;
  posix::ArenaMemory shared_memory;
  if (workers_wanted > 1) {
    auto bytes = SharedWeights::RequiredBytes(loaded.model, limits);
    if (!bytes.ok()) throw std::runtime_error(bytes.status().message());
    shared_memory = AllocateArena(bytes.value());
    const Status s = shared.Init(shared_memory.data(), shared_memory.size());
    if (!s.ok()) throw std::runtime_error(s.message());
  }
  SharedWeights* share = workers_wanted > 1 ? &shared : nullptr;
  auto need = Session::RequiredArenaBytes(loaded.model, limits, share);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  CheckArenaFits(need.value() * static_cast<size_t>(workers_wanted) + shared_memory.size());

  const bool interactive = input_is_stdin && ::isatty(STDIN_FILENO) && !ids_mode;
  const bool progress = !interactive && ::isatty(STDERR_FILENO);
  // The session's arena is planned for this budget too (Limits::max_batch_tokens), and the
  // batches below are cut to it.
  const int64_t batch_tokens = limits.max_batch_tokens;
  const int64_t target_tokens = limits.max_target_tokens;
  const size_t buffer = static_cast<size_t>(args.get_int(
      "buffer",
      limits.max_batch > 1 || workers_wanted > 1 ? 64LL * limits.max_batch * workers_wanted : 1, 1,
      1 << 20));
  const int64_t stride = limits.max_source_length;
  const int64_t out_stride = limits.max_target_length;
  const int32_t n_best = options.n_best;
  // One session per worker, each with its own arena and call buffers.
  struct Worker {
    posix::ArenaMemory arena;
    Session session;
    std::vector<int32_t> src, lengths, out, out_lengths;
    std::vector<float> out_scores;
  };
  const int worker_count = interactive ? 1 : workers_wanted;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < worker_count; ++i) {
    auto w = std::make_unique<Worker>();
    w->arena = AllocateArena(need.value());
    Status status =
        w->session.Prepare(loaded.model, limits, w->arena.data(), w->arena.size(), share);
    if (!status.ok()) throw std::runtime_error(status.message());
    w->src.resize(static_cast<size_t>(limits.max_batch * stride));
    w->lengths.resize(static_cast<size_t>(limits.max_batch));
    w->out.resize(static_cast<size_t>(limits.max_batch * n_best * out_stride));
    w->out_lengths.resize(static_cast<size_t>(limits.max_batch * n_best));
    w->out_scores.resize(static_cast<size_t>(limits.max_batch * n_best));
    workers.push_back(std::move(w));
  }
  int failures = 0;
  size_t lines_done = 0;
  std::mutex fail_mutex;  // workers fail lines concurrently

  // A failed line: one message on stderr with its real line number, counted once.
  auto fail = [&](Pending& p, const std::string& message) {
    std::lock_guard<std::mutex> lock(fail_mutex);
    if (!p.error.empty()) return;
    p.error = message;
    std::fprintf(stderr, "tern translate: line %zu: %s\n", p.line_number, message.c_str());
    ++failures;
  };

  auto failed = [&](const Pending& p) {
    std::lock_guard<std::mutex> lock(fail_mutex);
    return !p.error.empty();
  };

  using Slot = std::pair<size_t, size_t>;  // (pending index, piece index)
  // Translates every piece of the pending lines, max_batch pieces at a time.
  auto run = [&](std::vector<Pending>& pending) {
    // Output rows row_base * n_best ... of worker w's last call hold slot k's results.
    auto collect = [&](Worker& w, const std::vector<Slot>& slots, size_t k, size_t row_base) {
      const std::vector<int32_t>& out = w.out;
      const std::vector<int32_t>& out_lengths = w.out_lengths;
      const std::vector<float>& out_scores = w.out_scores;
      // Written even for a line that failed (its results are then never read): another worker
      // may be failing one of its other pieces right now.
      Pending& p = pending[slots[k].first];
      PieceResult& r = p.results[slots[k].second];
      r.ids.assign(static_cast<size_t>(n_best), {});
      r.log_probs.assign(static_cast<size_t>(n_best), 0.0f);
      r.lengths.assign(static_cast<size_t>(n_best), 0);
      const int32_t cap = EffectiveMaxLength(options, limits.max_target_length, w.lengths[k]);
      for (int32_t j = 0; j < n_best; ++j) {
        const size_t row = row_base * static_cast<size_t>(n_best) + static_cast<size_t>(j);
        r.ids[static_cast<size_t>(j)].assign(
            out.begin() + static_cast<std::ptrdiff_t>(row * out_stride),
            out.begin() + static_cast<std::ptrdiff_t>(row * out_stride + out_lengths[row]));
        // Scored tokens: the output and its EOS, unless it stopped at the length cap.
        const int32_t scored = std::min(out_lengths[row] + 1, cap);
        // Greedy returns the raw sum of log-probabilities, beam search the length-normalized
        // score (runtime/decoding/beam_search.cc Normalize): the raw sum is recovered from it.
        float raw = out_scores[row];
        if (options.beam_size > 1 && options.length_penalty != 0.0f && scored > 0) {
          raw *= std::pow(static_cast<float>(scored), options.length_penalty);
        }
        r.log_probs[static_cast<size_t>(j)] = raw;
        r.lengths[static_cast<size_t>(j)] = scored;
      }
    };
    // One batch on worker w: the pieces of `slots`, translated together.
    auto translate_batch = [&](Worker& w, const std::vector<Slot>& slots) {
      for (size_t k = 0; k < slots.size(); ++k) {
        const auto& ids = pending[slots[k].first].pieces[slots[k].second];
        std::copy(ids.begin(), ids.end(),
                  w.src.begin() + static_cast<std::ptrdiff_t>(k * static_cast<size_t>(stride)));
        w.lengths[k] = static_cast<int32_t>(ids.size());
      }
      const int32_t n = static_cast<int32_t>(slots.size());
      Status s =
          w.session.TranslateIds(w.src.data(), stride, w.lengths.data(), n, options, w.out.data(),
                                 out_stride, w.out_lengths.data(), w.out_scores.data());
      if (s.ok()) {
        for (size_t k = 0; k < slots.size(); ++k) collect(w, slots, k, k);
      } else if (n == 1) {
        fail(pending[slots[0].first], WithoutSentencePrefix(s.message()));
      } else {
        // One bad sentence fails the whole call: translate each alone, so that only the bad
        // line fails and every message names its own line.
        for (size_t k = 0; k < slots.size(); ++k) {
          Pending& p = pending[slots[k].first];
          if (failed(p)) continue;
          const Status one = w.session.TranslateIds(
              w.src.data() + static_cast<std::ptrdiff_t>(k * static_cast<size_t>(stride)), stride,
              &w.lengths[k], 1, options, w.out.data(), out_stride, w.out_lengths.data(),
              w.out_scores.data());
          if (one.ok()) {
            collect(w, slots, k, 0);
          } else {
            fail(p, WithoutSentencePrefix(one.message()));
          }
        }
      }
    };
    // Every piece of the buffer, shortest first when batching (stable: equal lengths keep the
    // input order), cut into batches of at most max_batch pieces, batch_tokens padded source
    // tokens and target_tokens decoder positions. A sentence's translation does not depend on its
    // batch (the runtime's batch invariance), so only the padding changes.
    std::vector<Slot> order;
    for (size_t p = 0; p < pending.size(); ++p) {
      pending[p].results.assign(pending[p].pieces.size(), {});
      if (!pending[p].error.empty()) continue;
      for (size_t piece = 0; piece < pending[p].pieces.size(); ++piece)
        order.emplace_back(p, piece);
    }
    auto piece_length = [&](const Slot& e) { return pending[e.first].pieces[e.second].size(); };
    if (limits.max_batch > 1) {
      std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return piece_length(a) < piece_length(b);
      });
    }
    // The decoder steps a piece may take: what the runtime plans its self-attention caches by
    // under --target-tokens (runtime/decoding/greedy.h DecoderSteps).
    auto piece_steps = [&](const Slot& e) {
      return static_cast<size_t>(DecoderSteps(options, loaded.model.config(),
                                              limits.max_target_length,
                                              static_cast<int32_t>(piece_length(e))));
    };
    std::vector<std::vector<Slot>> batches(1);
    size_t longest = 0, most_steps = 0;
    for (const auto& e : order) {
      const size_t length = piece_length(e);
      const size_t steps = target_tokens > 0 ? piece_steps(e) : 0;
      std::vector<Slot>* slots = &batches.back();
      const size_t padded = (slots->size() + 1) * std::max(longest, length);
      const size_t positions = (slots->size() + 1) * std::max(most_steps, steps);
      if (!slots->empty() &&
          ((batch_tokens > 0 && padded > static_cast<size_t>(batch_tokens)) ||
           (target_tokens > 0 && positions > static_cast<size_t>(target_tokens)))) {
        batches.emplace_back();
        slots = &batches.back();
        longest = 0;
        most_steps = 0;
      }
      slots->push_back(e);
      longest = std::max(longest, length);
      most_steps = std::max(most_steps, steps);
      if (static_cast<int32_t>(slots->size()) == limits.max_batch) {
        batches.emplace_back();
        longest = 0;
        most_steps = 0;
      }
    }
    if (batches.back().empty()) batches.pop_back();
    // The workers take batches in turn; each piece's result is written by the one worker that
    // translated it, and the lines are written below, in input order, after all have finished.
    std::atomic<size_t> next{0};
    auto work = [&](Worker& w) {
      for (size_t b = next++; b < batches.size(); b = next++) translate_batch(w, batches[b]);
    };
    if (workers.size() == 1 || batches.size() == 1) {
      work(*workers[0]);
    } else {
      std::vector<std::thread> threads;
      for (size_t i = 1; i < workers.size(); ++i) threads.emplace_back(work, std::ref(*workers[i]));
      work(*workers[0]);
      for (std::thread& t : threads) t.join();
    }
    for (auto& p : pending) {
      // The pieces joined in order: ids concatenated, log-probabilities and lengths added.
      p.outputs.assign(static_cast<size_t>(n_best), {});
      p.log_probs.assign(static_cast<size_t>(n_best), 0.0f);
      p.lengths.assign(static_cast<size_t>(n_best), 0);
      for (const PieceResult& r : p.results) {
        for (size_t j = 0; j < r.ids.size(); ++j) {
          p.outputs[j].insert(p.outputs[j].end(), r.ids[j].begin(), r.ids[j].end());
          p.log_probs[j] += r.log_probs[j];
          p.lengths[j] += r.lengths[j];
        }
      }
      if (p.pieces.empty()) p.outputs.clear();
    }
    for (auto& p : pending) {
      std::vector<std::string> texts(p.outputs.size());
      for (size_t j = 0; j < p.outputs.size() && p.error.empty(); ++j) {
        const auto& o = p.outputs[j];
        if (ids_mode) {
          for (size_t k = 0; k < o.size(); ++k) texts[j] += (k ? " " : "") + std::to_string(o[k]);
        } else {
          Status s = text_codec.Decode(o.data(), o.size(), &texts[j]);
          if (!s.ok()) fail(p, s.message());
        }
      }
      if (json) {
        std::cout << "{\"line\": " << p.line_number << ", \"source\": " << JsonString(p.source);
        if (!p.error.empty()) {
          std::cout << ", \"error\": " << JsonString(p.error) << "}\n";
          continue;
        }
        std::cout << ", \"translations\": [";
        for (size_t j = 0; j < p.outputs.size(); ++j) {
          const double length = static_cast<double>(p.lengths[j]);
          const double alpha = options.length_penalty;
          const double normalized = alpha == 0.0 || length <= 0
                                        ? p.log_probs[j]
                                        : p.log_probs[j] / std::pow(length, alpha);
          std::cout << (j ? ", " : "") << "{\"text\": " << JsonString(texts[j]) << ", \"ids\": [";
          for (size_t k = 0; k < p.outputs[j].size(); ++k)
            std::cout << (k ? ", " : "") << p.outputs[j][k];
          std::cout << "], \"log_prob\": " << p.log_probs[j]
                    << ", \"normalized_score\": " << normalized
                    << ", \"scored_tokens\": " << p.lengths[j] << "}";
        }
        std::cout << "]}";
      } else if (p.error.empty()) {
        for (size_t j = 0; j < texts.size(); ++j) std::cout << (j ? " ||| " : "") << texts[j];
      }
      std::cout << '\n';
    }
    FlushStdout();
    lines_done += pending.size();
    if (progress) std::fprintf(stderr, "\r%zu lines translated", lines_done);
    pending.clear();
  };

  std::vector<Pending> pending;
  std::string line;
  size_t line_number = 0;
  if (interactive) std::fprintf(stderr, "> ");
  while (std::getline(*input, line)) {
    ++line_number;
    Pending p;
    p.line_number = line_number;
    p.source = line;
    std::vector<int32_t> ids;
    if (ids_mode) {
      std::string error;
      ids = ParseIds(line, config.src_vocab_size, &error);
      if (!error.empty()) fail(p, error);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      Status s = text_codec.Encode(line, config.eos_id, &ids);
      if (!s.ok()) {
        fail(p, s.message());
        ids.clear();
      }
    }
    if (!ids.empty() && source_lang >= 0) ids.insert(ids.begin(), source_lang);
    if (!ids.empty()) {
      const size_t limit = static_cast<size_t>(stride);
      if (ids.size() > limit && long_mode == "error") {
        fail(p, std::to_string(ids.size()) + " tokens; --max-source is " + std::to_string(limit) +
                    " (or use --long split)");
      } else if (ids.size() > limit) {
        // Split into pieces of limit - 1 tokens, each closed with EOS (when the input had one).
        const bool has_eos = ids.back() == config.eos_id;
        const size_t body = has_eos ? ids.size() - 1 : ids.size();
        const size_t chunk = limit > 1 ? limit - 1 : 1;
        for (size_t at = 0; at < body; at += chunk) {
          std::vector<int32_t> piece(
              ids.begin() + static_cast<std::ptrdiff_t>(at),
              ids.begin() + static_cast<std::ptrdiff_t>(std::min(body, at + chunk)));
          piece.push_back(config.eos_id);
          p.pieces.push_back(piece);
        }
      } else {
        p.pieces.push_back(ids);
      }
    }
    pending.push_back(std::move(p));
    if (interactive) {
      const auto start = std::chrono::steady_clock::now();
      run(pending);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      std::fprintf(stderr, "(%.1f ms)\n> ", ms);
    } else if (pending.size() >= buffer) {
      run(pending);
    }
  }
  if (input->bad()) throw std::runtime_error("cannot read the input");
  run(pending);
  if (progress && lines_done > 0) std::fprintf(stderr, "\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace tern::cli
