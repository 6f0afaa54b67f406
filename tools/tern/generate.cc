// tern generate: continue prompts with a decoder-only (GPT-style) model, greedy or sampled.
// Prompts are text (--prompt, or one per stdin line) through the tokenizer stored in the model,
// whose continuation is printed as it is generated (tern::TextGenerator), or token ids (--ids,
// --ids - for one prompt per stdin line), whose new ids go to stdout on one line.
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/decoding/sampling.h"
#include "tools/tern/args.h"
#include "tools/tern/commands.h"
#include "tools/tern/json_string.h"
#include "tools/tern/load.h"
#include "tools/tern/output.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern generate -m MODEL [--prompt TEXT | --ids \"ID ...\" | --ids -] [options]\n"
    "\n"
    "Continues a prompt with a decoder-only (GPT-style) model. A text prompt goes through the\n"
    "tokenizer stored in the model (tokenizer.json or tokenizer.model at convert time), with the\n"
    "special tokens its configuration adds (BOS), and its continuation is printed as it is\n"
    "generated, in whole UTF-8 characters, then a newline. Token ids give the new ids on one\n"
    "line. Without --prompt or --ids, reads one text prompt per stdin line. Generation stops at\n"
    "the model's EOS (not printed), a stop string, --max-new-tokens or --max-length.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model (architecture decoder_only, e.g. --arch gpt2)\n"
    "  --prompt TEXT         the prompt as text\n"
    "  --ids \"ID ...\"        the prompt as space-separated token ids; --ids -: one per stdin "
    "line\n"
    "  --stop S              stop when the text contains S (repeatable; \\n \\r \\t \\\\ are\n"
    "                        escapes); S and what follows are not printed\n"
    "  --print-special       print special tokens (EOS with --ignore-eos, ...) as their text\n"
    "  --no-special-tokens   do not add the tokenizer's special tokens (BOS) around the prompt\n"
    "  --max-new-tokens N    at most N new tokens (default: until --max-length is reached)\n"
    "  --max-length N        positions per sequence, prompt + new tokens (default\n"
    "                        min(256, max_positions)); also the longest prompt\n"
    "  --temperature T       0 (default): greedy; > 0 samples from softmax(logits / T)\n"
    "  --top-k K             sample among the K most likely tokens (default 0: all)\n"
    "  --top-p P             sample among the smallest set of tokens with mass >= P (default 1)\n"
    "  --seed S              sampler seed (PCG32; the same ids on every platform, default 0)\n"
    "  --ignore-eos          do not stop at the model's EOS id\n"
    "  --json                one JSON object per prompt, printed when it is done: text prompts\n"
    "                        {prompt, prompt_ids, text, ids, log_probs, finish}, id prompts\n"
    "                        {prompt, ids, log_probs}. log_probs: of each new id, log softmax(\n"
    "                        logits / T) over the whole vocabulary, T = --temperature (1 when\n"
    "                        greedy), before top-k / top-p; finish: eos, length or stop\n"
    "  --threads N           intra-op threads (default 1)\n"
    "  --backend B           auto (default: XNNPACK when built with it), xnnpack or reference\n"
    "  --kv-cache fp32|fp16  element type of the K/V cache (default fp32). fp16 halves its bytes\n"
    "                        (the arena's share that grows with --max-length) and what each new\n"
    "                        token reads of it; keys and values are rounded to fp16 as they enter\n"
    "  --no-mmap             read MODEL into memory instead of mapping it (a mapped file must not\n"
    "                        change while it runs: docs/security.md)\n"
    "\n"
    "Order of the sampling filters: temperature, top-k, top-p, renormalize, draw\n"
    "(runtime/decoding/sampling.h). exit status: 0 when every prompt was continued; 1 when any\n"
    "failed (one line on stderr naming it); 2 for usage errors.\n";

std::vector<int32_t> ParseIds(const std::string& text, const std::string& where) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (errno || *end != '\0' || v < INT32_MIN || v > INT32_MAX) {
      throw std::runtime_error(where + ": \"" + word + "\" is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

template <typename Ids>
std::string Join(const Ids& ids, const char* separator) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? separator : "") + std::to_string(ids[i]);
  return out;
}

// JSON numbers: -inf (a token of probability 0 under the temperature) is null.
std::string JoinLogProbs(const float* values, size_t count) {
  std::string out;
  char number[32];
  for (size_t i = 0; i < count; ++i) {
    if (std::isfinite(values[i])) {
      std::snprintf(number, sizeof number, "%.9g", static_cast<double>(values[i]));
    } else {
      std::snprintf(number, sizeof number, "null");
    }
    out += (i ? ", " : "") + std::string(number);
  }
  return out;
}

// --stop's escapes: \n, \r, \t and \\ (a shell passes "\n\n" as backslashes).
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 'n') {
      out += '\n';
    } else if (c == 'r') {
      out += '\r';
    } else if (c == 't') {
      out += '\t';
    } else if (c == '\\') {
      out += '\\';
    } else {
      throw UsageError(std::string("--stop: unknown escape \\") + c +
                       " (\\n, \\r, \\t and \\\\ are known)");
    }
  }
  if (out.empty()) throw UsageError("--stop needs a non-empty string");
  return out;
}

bool PrintPiece(void*, const TextPiece& piece) {
  std::fwrite(piece.text, 1, piece.size, stdout);
  std::fflush(stdout);
  return true;
}

}  // namespace

int Generate(int argc, char** argv) {
  Args args(argc, argv,
            {"model", "ids", "prompt", "stop", "max-new-tokens", "max-length", "temperature",
             "top-k", "top-p", "seed", "threads", "backend", "kv-cache"},
            {"ignore-eos", "json", "no-mmap", "print-special", "no-special-tokens", "help"},
            {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args.has("model")) throw UsageError("--model is required");
  if (args.has("prompt") && args.has("ids")) throw UsageError("give --prompt or --ids, not both");
  const bool text_mode = !args.has("ids");
  if (!text_mode &&
      (args.has("stop") || args.has("print-special") || args.has("no-special-tokens"))) {
    throw UsageError("--stop, --print-special and --no-special-tokens are for text prompts");
  }
  std::vector<std::string> stop;
  for (const std::string& s : args.get_all("stop")) stop.push_back(Unescape(s));
  auto real = [&](const char* name, float fallback) {
    if (!args.has(name)) return fallback;
    const std::string v = args.get(name);
    char* end = nullptr;
    errno = 0;
    const float f = std::strtof(v.c_str(), &end);
    if (errno || end == v.c_str() || *end != '\0') {
      throw UsageError(std::string("option --") + name + " needs a number, got \"" + v + "\"");
    }
    return f;
  };
  GenerationOptions options;
  options.max_new_tokens =
      static_cast<int32_t>(args.get_int("max-new-tokens", 0, 0, ConfigBounds::kMaxPositions));
  options.stop_at_eos = !args.has("ignore-eos");
  options.sampling.temperature = real("temperature", 0.0f);
  options.sampling.top_k =
      static_cast<int32_t>(args.get_int("top-k", 0, 0, ConfigBounds::kMaxVocab));
  options.sampling.top_p = real("top-p", 1.0f);
  options.sampling.seed = static_cast<uint64_t>(args.get_int("seed", 0, 0, LLONG_MAX));
  const Status checked = CheckSamplingOptions(options.sampling);
  if (!checked.ok()) throw UsageError(checked.message());

  LoadedModel loaded = LoadModel(args.get("model"), args.has("no-mmap"));
  const Model& model = loaded.model;
  if (model.config().architecture != Architecture::kDecoderOnly) {
    throw std::runtime_error(
        args.get("model") +
        " is not a decoder-only model (tern translate runs encoder-decoder models)");
  }
  // The same flags, defaults and bounds as translate and inspect (tools/tern/session_flags.h);
  // a prompt is as long as a whole sequence may be.
  Limits limits = ParseLimits(args, model.config());
  limits.max_source_length = limits.max_target_length;
  auto need = Generator::RequiredArenaBytes(model, limits);
  if (!need.ok()) throw std::runtime_error(need.status().message());
  CheckArenaFits(need.value());
  posix::ArenaMemory arena = AllocateArena(need.value());
  Generator generator;
  const Status prepared = generator.Prepare(model, limits, arena.data(), arena.size());
  if (!prepared.ok()) throw std::runtime_error(prepared.message());

  const bool json = args.has("json");
  if (text_mode) {
    TextGenerator text;
    const Status loaded = text.Load(model);
    if (!loaded.ok()) {
      throw std::runtime_error(args.get("model") + ": " + loaded.message() +
                               "; --ids gives a prompt as token ids");
    }
    std::vector<const char*> stop_pointers;
    for (const std::string& s : stop) stop_pointers.push_back(s.c_str());
    TextGenerationOptions text_options;
    text_options.generation = options;
    if (text_options.generation.max_new_tokens == 0)
      text_options.generation.max_new_tokens = limits.max_target_length;
    text_options.stop = stop_pointers.data();
    text_options.stop_count = stop_pointers.size();
    text_options.print_special = args.has("print-special");
    text_options.add_special_tokens = !args.has("no-special-tokens");
    if (!json) text_options.on_text = PrintPiece;
    auto run_text = [&](const std::string& prompt, const std::string& where) {
      TextResult result;
      const Status s =
          text.Generate(generator, prompt.data(), prompt.size(), text_options, &result);
      if (!s.ok()) throw std::runtime_error(where + ": " + s.message());
      if (json) {
        const Span<const char> t = text.text();
        std::printf(
            "{\"prompt\": %s, \"prompt_ids\": [%s], \"text\": %s, \"ids\": [%s], "
            "\"log_probs\": [%s], \"finish\": \"%s\"}\n",
            JsonString(prompt).c_str(), Join(text.prompt_ids(), ", ").c_str(),
            JsonString(std::string(t.data(), t.size())).c_str(), Join(text.ids(), ", ").c_str(),
            JoinLogProbs(text.log_probs().data(), text.log_probs().size()).c_str(),
            FinishReasonName(result.finish));
      } else {
        std::printf("\n");
      }
      FlushStdout();
    };
    if (args.has("prompt")) {
      run_text(args.get("prompt"), "--prompt");
      return 0;
    }
    int status = 0;
    std::string line;
    for (size_t number = 1; std::getline(std::cin, line); ++number) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::string where = "line " + std::to_string(number);
      try {
        run_text(line, where);
      } catch (const OutputError&) {
        throw;
      } catch (const std::runtime_error& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "tern generate: %s\n", e.what());
        std::printf("\n");  // keep outputs aligned with inputs
        status = 1;
      }
    }
    return status;
  }

  std::vector<int32_t> out(static_cast<size_t>(limits.max_target_length));
  std::vector<float> log_probs(out.size());
  auto run = [&](const std::vector<int32_t>& prompt, const std::string& where) {
    if (prompt.empty())
      throw std::runtime_error(where + ": the prompt is empty (give at least one token id)");
    size_t produced = 0;
    GenerationOptions o = options;
    if (o.max_new_tokens == 0) o.max_new_tokens = limits.max_target_length;  // the session caps it
    const Status s = generator.Generate(Span<const int32_t>(prompt.data(), prompt.size()),
                                        Span<int32_t>(out.data(), out.size()), &produced, o,
                                        Span<float>(log_probs.data(), log_probs.size()));
    if (!s.ok()) throw std::runtime_error(where + ": " + s.message());
    const std::vector<int32_t> ids(out.begin(),
                                   out.begin() + static_cast<std::ptrdiff_t>(produced));
    if (json) {
      std::printf("{\"prompt\": [%s], \"ids\": [%s], \"log_probs\": [%s]}\n",
                  Join(prompt, ", ").c_str(), Join(ids, ", ").c_str(),
                  JoinLogProbs(log_probs.data(), produced).c_str());
    } else {
      std::printf("%s\n", Join(ids, " ").c_str());
    }
    FlushStdout();
  };
  if (args.get("ids") != "-") {
    run(ParseIds(args.get("ids"), "--ids"), "--ids");
    return 0;
  }
  int status = 0;
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    const std::string where = "line " + std::to_string(number);
    try {
      run(ParseIds(line, where), where);
    } catch (const OutputError&) {
      throw;  // stdout is gone: no later prompt can be written either
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "tern generate: %s\n", e.what());
      std::printf("\n");  // keep outputs aligned with inputs
      status = 1;
    }
  }
  return status;
}

}  // namespace tern::cli
