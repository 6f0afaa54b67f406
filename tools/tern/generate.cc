// tern generate: continue prompts with a decoder-only (GPT-style) model, greedy or sampled.
// Prompts are token ids: one with --ids "...", or one per stdin line; each prompt's new ids go
// to stdout on one line.
#include <cerrno>
#include <climits>
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
#include "tools/tern/load.h"
#include "tools/tern/output.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern generate -m MODEL [--ids \"ID ...\"] [options]\n"
    "\n"
    "Continues a prompt with a decoder-only (GPT-style) model and prints the new token ids on one\n"
    "line (without the prompt and without EOS). Without --ids, reads one prompt per stdin line.\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model (architecture decoder_only, e.g. --arch gpt2)\n"
    "  --ids \"ID ...\"        the prompt as space-separated token ids\n"
    "  --max-new-tokens N    at most N new tokens (default: until --max-length is reached)\n"
    "  --max-length N        positions per sequence, prompt + new tokens (default\n"
    "                        min(256, max_positions)); also the longest prompt\n"
    "  --temperature T       0 (default): greedy; > 0 samples from softmax(logits / T)\n"
    "  --top-k K             sample among the K most likely tokens (default 0: all)\n"
    "  --top-p P             sample among the smallest set of tokens with mass >= P (default 1)\n"
    "  --seed S              sampler seed (PCG32; the same ids on every platform, default 0)\n"
    "  --ignore-eos          do not stop at the model's EOS id\n"
    "  --json                one JSON object per prompt: prompt and ids\n"
    "  --threads N           intra-op threads (default 1)\n"
    "  --backend B           auto (default: XNNPACK when built with it), xnnpack or reference\n"
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

std::string Join(const std::vector<int32_t>& ids, const char* separator) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? separator : "") + std::to_string(ids[i]);
  return out;
}

}  // namespace

int Generate(int argc, char** argv) {
  Args args(argc, argv,
            {"model", "ids", "max-new-tokens", "max-length", "temperature", "top-k", "top-p",
             "seed", "threads", "backend"},
            {"ignore-eos", "json", "no-mmap", "help"}, {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args.has("model")) throw UsageError("--model is required");
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
  std::vector<uint8_t> arena(need.value());
  Generator generator;
  const Status prepared = generator.Prepare(model, limits, arena.data(), arena.size());
  if (!prepared.ok()) throw std::runtime_error(prepared.message());

  std::vector<int32_t> out(static_cast<size_t>(limits.max_target_length));
  auto run = [&](const std::vector<int32_t>& prompt, const std::string& where) {
    if (prompt.empty())
      throw std::runtime_error(where + ": the prompt is empty (give at least one token id)");
    size_t produced = 0;
    GenerationOptions o = options;
    if (o.max_new_tokens == 0) o.max_new_tokens = limits.max_target_length;  // the session caps it
    const Status s = generator.Generate(Span<const int32_t>(prompt.data(), prompt.size()),
                                        Span<int32_t>(out.data(), out.size()), &produced, o);
    if (!s.ok()) throw std::runtime_error(where + ": " + s.message());
    const std::vector<int32_t> ids(out.begin(),
                                   out.begin() + static_cast<std::ptrdiff_t>(produced));
    if (args.has("json")) {
      std::printf("{\"prompt\": [%s], \"ids\": [%s]}\n", Join(prompt, ", ").c_str(),
                  Join(ids, ", ").c_str());
    } else {
      std::printf("%s\n", Join(ids, " ").c_str());
    }
    FlushStdout();
  };
  if (args.has("ids")) {
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
