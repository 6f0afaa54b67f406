// tern translate: stdin lines -> translations on stdout, one line each (empty lines stay empty,
// so outputs align with inputs).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/load.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern translate -m MODEL [options] < input > output\n"
    "\n"
    "Reads one sentence per line from stdin and writes its translation to stdout; empty lines\n"
    "stay empty. Text is tokenized with the SentencePiece model stored in MODEL. When stdin is\n"
    "a terminal, it prompts and shows the time per sentence.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model\n"
    "  --ids                 token ids in and out: a line is space-separated source ids (EOS\n"
    "                        included, as the model expects); output ids exclude start and EOS\n"
    "  --batch N             sentences translated together (default 1)\n"
    "  --max-source N        longest source in tokens incl. EOS (default min(256, max_positions))\n"
    "  --max-length N        longest output in tokens incl. EOS (default min(256, max_positions))\n"
    "  --long error|split    a source longer than --max-source is an error (default) or is\n"
    "                        split into pieces translated one after the other\n"
    "  --beam N              beam search with N hypotheses (default 1: greedy)\n"
    "  --n-best K            print the K best translations per line (needs --beam >= K);\n"
    "                        plain output separates them with \" ||| \"\n"
    "  --length-penalty A    beam: rank by score / length^A (default 1.0)\n"
    "  --min-length N        no EOS before N tokens\n"
    "  --max-length-ratio R  stop at ceil(R * source length) + 5 tokens\n"
    "  --no-repeat-ngram N   never repeat an n-gram of N tokens\n"
    "  --repetition-penalty P  > 1 discourages repeated tokens\n"
    "  --json                one JSON object per line: source, translations, ids, scores\n"
    "  --threads N           intra-op threads (default 1)\n"
    "  --backend B           auto (default: XNNPACK when built with it), xnnpack or reference\n"
    "\n"
    "exit status: 0 when every line was translated; 1 when any line failed (each failure is\n"
    "one line on stderr naming the input line); 2 for usage errors.\n";

std::vector<int32_t> ParseIds(const std::string& line, size_t line_number) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (errno || *end != '\0' || v < INT32_MIN || v > INT32_MAX) {
      throw std::runtime_error("line " + std::to_string(line_number) + ": \"" + word +
                               "\" is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

struct Pending {
  size_t line_number = 0;
  std::string source;
  std::vector<std::vector<int32_t>>
      pieces;  // source pieces (split long input), empty for an empty line
  std::vector<std::vector<int32_t>> outputs;  // [n_best]: concatenated over pieces
  std::vector<float> scores;                  // [n_best]: summed over pieces
};

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

int Translate(int argc, char** argv) {
  Args args(argc, argv,
            {"model", "batch", "max-source", "max-length", "long", "beam", "n-best",
             "length-penalty", "min-length", "max-length-ratio", "no-repeat-ngram",
             "repetition-penalty", "threads", "backend"},
            {"ids", "json", "help"}, {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args.has("model")) throw UsageError("--model is required");
  const std::string long_mode = args.get("long", "error");
  if (long_mode != "error" && long_mode != "split")
    throw UsageError("--long must be error or split");
  const bool ids_mode = args.has("ids");
  const bool json = args.has("json");
  DecodingOptions options;
  options.beam_size = static_cast<int32_t>(args.get_int("beam", 1));
  options.n_best = static_cast<int32_t>(args.get_int("n-best", 1));
  options.min_length = static_cast<int32_t>(args.get_int("min-length", 0));
  options.no_repeat_ngram_size = static_cast<int32_t>(args.get_int("no-repeat-ngram", 0));
  auto real = [&](const char* name, float fallback) {
    const std::string v = args.get(name);
    if (v.empty()) return fallback;
    char* end = nullptr;
    const float f = std::strtof(v.c_str(), &end);
    if (*end != '\0' || !std::isfinite(f))
      throw UsageError(std::string("--") + name + " needs a number");
    return f;
  };
  options.length_penalty = real("length-penalty", 1.0f);
  options.repetition_penalty = real("repetition-penalty", 1.0f);
  options.max_length_ratio = real("max-length-ratio", 0.0f);
  if (options.max_length_ratio > 0.0f) options.max_length_extra = 5;
  if (options.beam_size < 1) throw UsageError("--beam must be >= 1");
  if (options.n_best < 1 || options.n_best > options.beam_size) {
    throw UsageError("--n-best must be between 1 and --beam");
  }
  LoadedModel loaded = LoadModel(args.get("model"));
  const ModelConfig& config = loaded.model.config();
  Tokenizer source_tokenizer, target_tokenizer;
  if (!ids_mode) {
    Status s = source_tokenizer.Load(loaded.model.source_tokenizer());
    if (s.ok()) s = target_tokenizer.Load(loaded.model.target_tokenizer());
    if (!s.ok())
      throw std::runtime_error(std::string(s.message()) +
                               " (use --ids, or convert with --tokenizer)");
  }
  const long long default_length = config.max_positions < 256 ? config.max_positions : 256;
  Limits limits;
  limits.max_batch = static_cast<int32_t>(args.get_int("batch", 1));
  limits.max_source_length = static_cast<int32_t>(args.get_int("max-source", default_length));
  limits.max_target_length = static_cast<int32_t>(args.get_int("max-length", default_length));
  limits.beam_size = options.beam_size;
  limits.threads = static_cast<int32_t>(args.get_int("threads", 1));
  const std::string backend = args.get("backend", "auto");
  if (backend == "auto") {
    limits.backend = Backend::kAuto;
  } else if (backend == "xnnpack") {
    limits.backend = Backend::kXnnpack;
  } else if (backend == "reference") {
    limits.backend = Backend::kReference;
  } else {
    throw UsageError("--backend must be auto, xnnpack or reference");
  }
  auto need = Session::RequiredArenaBytes(loaded.model, limits);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  std::vector<uint8_t> arena(need.value());
  Session session;
  Status status = session.Prepare(loaded.model, limits, arena.data(), arena.size());
  if (!status.ok()) throw std::runtime_error(status.message());

  const bool interactive = ::isatty(STDIN_FILENO) && !ids_mode;
  const int64_t stride = limits.max_source_length;
  const int64_t out_stride = limits.max_target_length;
  std::vector<int32_t> src(static_cast<size_t>(limits.max_batch * stride));
  std::vector<int32_t> lengths(static_cast<size_t>(limits.max_batch));
  const int32_t n_best = options.n_best;
  std::vector<int32_t> out(static_cast<size_t>(limits.max_batch * n_best * out_stride));
  std::vector<int32_t> out_lengths(static_cast<size_t>(limits.max_batch * n_best));
  std::vector<float> out_scores(static_cast<size_t>(limits.max_batch * n_best));
  int failures = 0;

  // Translates every piece of the pending lines, max_batch pieces at a time.
  auto run = [&](std::vector<Pending>& pending) {
    std::vector<std::pair<size_t, size_t>> slots;  // (pending index, piece index)
    auto flush = [&]() {
      if (slots.empty()) return;
      Status s = session.TranslateIds(src.data(), stride, lengths.data(),
                                      static_cast<int32_t>(slots.size()), options, out.data(),
                                      out_stride, out_lengths.data(), out_scores.data());
      if (!s.ok())
        throw std::runtime_error("line " + std::to_string(pending[slots[0].first].line_number) +
                                 ": " + s.message());
      for (size_t k = 0; k < slots.size(); ++k) {
        Pending& p = pending[slots[k].first];
        p.outputs.resize(static_cast<size_t>(n_best));
        p.scores.resize(static_cast<size_t>(n_best), 0.0f);
        for (int32_t j = 0; j < n_best; ++j) {
          const size_t row = k * static_cast<size_t>(n_best) + static_cast<size_t>(j);
          auto& o = p.outputs[static_cast<size_t>(j)];
          o.insert(o.end(), out.begin() + static_cast<std::ptrdiff_t>(row * out_stride),
                   out.begin() + static_cast<std::ptrdiff_t>(row * out_stride + out_lengths[row]));
          p.scores[static_cast<size_t>(j)] += out_scores[row];
        }
      }
      slots.clear();
    };
    for (size_t p = 0; p < pending.size(); ++p) {
      for (size_t piece = 0; piece < pending[p].pieces.size(); ++piece) {
        const auto& ids = pending[p].pieces[piece];
        std::copy(ids.begin(), ids.end(),
                  src.begin() + static_cast<std::ptrdiff_t>(slots.size() * stride));
        lengths[slots.size()] = static_cast<int32_t>(ids.size());
        slots.emplace_back(p, piece);
        if (static_cast<int32_t>(slots.size()) == limits.max_batch) flush();
      }
    }
    flush();
    for (const auto& p : pending) {
      std::vector<std::string> texts(p.outputs.size());
      for (size_t j = 0; j < p.outputs.size(); ++j) {
        const auto& o = p.outputs[j];
        if (ids_mode) {
          for (size_t k = 0; k < o.size(); ++k) texts[j] += (k ? " " : "") + std::to_string(o[k]);
        } else {
          Status s = target_tokenizer.Decode(o.data(), o.size(), &texts[j]);
          if (!s.ok())
            throw std::runtime_error("line " + std::to_string(p.line_number) + ": " + s.message());
        }
      }
      if (json) {
        std::cout << "{\"line\": " << p.line_number << ", \"source\": " << JsonString(p.source)
                  << ", \"translations\": [";
        for (size_t j = 0; j < p.outputs.size(); ++j) {
          std::cout << (j ? ", " : "") << "{\"text\": " << JsonString(texts[j]) << ", \"ids\": [";
          for (size_t k = 0; k < p.outputs[j].size(); ++k)
            std::cout << (k ? ", " : "") << p.outputs[j][k];
          std::cout << "], \"score\": " << p.scores[j] << "}";
        }
        std::cout << "]}";
      } else {
        for (size_t j = 0; j < texts.size(); ++j) std::cout << (j ? " ||| " : "") << texts[j];
      }
      std::cout << '\n';
    }
    std::cout.flush();
    pending.clear();
  };

  std::vector<Pending> pending;
  std::string line;
  size_t line_number = 0;
  if (interactive) std::fprintf(stderr, "> ");
  while (std::getline(std::cin, line)) {
    ++line_number;
    Pending p;
    p.line_number = line_number;
    p.source = line;
    std::vector<int32_t> ids;
    if (ids_mode) {
      ids = ParseIds(line, line_number);
    } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
      Status s = source_tokenizer.Encode(line, true, config.eos_id, &ids);
      if (!s.ok()) {
        std::fprintf(stderr, "tern translate: line %zu: %s\n", line_number, s.message());
        ++failures;
        ids.clear();
      }
    }
    if (!ids.empty()) {
      const size_t limit = static_cast<size_t>(stride);
      if (ids.size() > limit && long_mode == "error") {
        std::fprintf(
            stderr,
            "tern translate: line %zu: %zu tokens; --max-source is %zu (or use --long split)\n",
            line_number, ids.size(), limit);
        ++failures;
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
    } else if (static_cast<int32_t>(pending.size()) >= limits.max_batch) {
      run(pending);
    }
  }
  run(pending);
  return failures == 0 ? 0 : 1;
}

}  // namespace tern::cli
