// tern bench: how fast one model translates on this machine (a batch of --batch sentences,
// greedy or --beam K), and how much memory it takes. Not a test: numbers depend on the CPU and on
// whatever else runs; bench/run.sh puts them beside PyTorch and ONNX Runtime measured in the same
// run (docs/benchmarks.md).
//
// What is timed (steady_clock, medians over --repeat runs after --warmup runs):
//   load_prepare_ms   mmap + Model::Load + Session::RequiredArenaBytes + arena allocation +
//                     Session::Prepare (packs the weights on the XNNPACK backend); measured once,
//                     as a user's first load (the file is usually in the page cache).
//   encode_ms_<n>     EncoderDecoder::Encode of --batch n-token sources (encoder + cross K/V).
//   decode_ms_per_token  GreedyDecode (BeamSearch with --beam K > 1) of exactly --tokens tokens
//                     per sentence (min_length = max_length = tokens: EOS is masked, as every
//                     peer does), divided by the token count: one step of the whole batch.
//   total_ms          Encode + decode: what Session::TranslateIds runs for a batch of --tokens
//                     translations of --source-length sources; tokens_per_s (generated tokens
//                     of all sentences per second) from it.
// The sources are deterministic (BenchSource below; bench/peers use the same formula), so every
// engine translates the same ids and the generated ids can be compared.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "runtime/decoding/beam_search.h"
#include "runtime/decoding/greedy.h"
#include "tools/tern/args.h"
#include "tools/tern/bench_linear.h"
#include "tools/tern/bench_lm.h"
#include "tools/tern/bench_util.h"
#include "tools/tern/commands.h"
#include "tools/tern/load.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

const char kHelp[] =
    "usage: tern bench -m MODEL [options]\n"
    "       tern bench --linear [-m MODEL] [--rows 1,4,16,64] [--int4-block 32] [--threads N]\n"
    "                           [--working-set MIB] [--repeat R] [--json] [--gather C | --split]\n"
    "                           [--weights f32,f16,int8,int4row,int4block,int8-session,...]\n"
    "\n"
    "A language model (decoder-only): a batch of --batch prompts of --prompt-length tokens is\n"
    "prefilled and --tokens tokens per prompt generated greedily (EOS not stopping them):\n"
    "prefill and decode tokens/s, arena and peak RSS.\n"
    "\n"
    "Measures one model on a batch of --batch sentences: load + prepare, encode (--source-length\n"
    "and 128-token sources), greedy (or --beam K) decoding of exactly --tokens tokens per\n"
    "sentence (EOS masked until then), the whole translation, arena bytes and peak RSS. Times\n"
    "are medians over --repeat runs after --warmup runs. Sources are deterministic: sentence b's\n"
    "id[i] = 4 + ((b * length + i) * 7919 + 17) mod (vocab - 4), last id EOS (bench/peers use\n"
    "the same).\n"
    "\n"
    "options:\n"
    "  -m, --model PATH      the .tern model\n"
    "  --threads N           intra-op threads (default 1)\n"
    "  --backend NAME        auto (default), xnnpack or reference\n"
    "  --kv-cache fp32|fp16  element type of the K/V caches (default fp32)\n"
    "  --source-length N     source tokens incl. EOS for the translation (default 32)\n"
    "  --tokens N            generated tokens per translation (default 32; language models:\n"
    "                        per prompt, default 128)\n"
    "  --prompt-length N     language models: prompt tokens (default 128)\n"
    "  --batch B             sentences translated together (default 1)\n"
    "  --beam K              beam search with K beams (default 1: greedy)\n"
    "  --repeat R            timed runs per measurement (default 5)\n"
    "  --warmup W            untimed runs first (default 1)\n"
    "  --json                one JSON object instead of the table\n"
    "  --no-mmap             read MODEL into memory instead of mapping it\n"
    "  --no-shortlist        ignore the model's vocabulary shortlist; with one (and without\n"
    "                        this flag) every run is timed with and without it, interleaved\n"
    "\n"
    "--linear: the linear layers alone, one shape at a time (MODEL's d x d, d_ff x d, d x d_ff,\n"
    "vocabulary x d; without -m the paper-base model's), at each row count of --rows (1: a\n"
    "batch-1 decode step; the batch x beam rows of a batched step; the encoder's tokens), with\n"
    "f32, f16, int8, int4 per row and int4 per block of --int4-block weights (default 32, the\n"
    "converter's) on XNNPACK, and int8 and int4 per row as sessions run them (\"int8 session\",\n"
    "\"int4 session\": on CPUs with AVX2 and neither AVX-512 nor AVX-VNNI tern's loops, else the\n"
    "same operators): microseconds per call, GB/s of weights streamed, int4's time over int8's\n"
    "(where int4 stops paying) and the sessions' over XNNPACK's. The calls cycle through copies "
    "of\n"
    "each layer that take --working-set MiB together (default 96, more than a last-level\n"
    "cache: weights come from memory, as in a decode step; 0: one copy, weights in cache).\n"
    "--weights: only these columns (f32, f16, int8, int4row, int4block, int8-session,\n"
    "int4-session; default all), e.g. a large model's int8 and int4 paths without its f32.\n"
    "--linear --gather C: the vocabulary shortlist's row kernel on C of the vocabulary x d\n"
    "layer's rows against copying those rows out and packing an operator for them once per\n"
    "sentence (int8 and int4 per row): us per step, us per sentence, and after how many steps\n"
    "gathering would pay.\n"
    "With --threads N, layers are built as a session builds them: with 2 to 8 threads, layers\n"
    "of at least 32 x N output rows are cut into one operator per thread.\n"
    "--linear --split (with --threads 2 to 8): int8 layers on N threads two ways, XNNPACK's\n"
    "own tiling of one operator on the pool against the output rows cut into N operators run\n"
    "as one pool task each, or from 256 rows of x each tiled over the pool in turn (what\n"
    "sessions do); us per call and speed-up over one thread (outputs checked identical).\n";

using bench::Check;
using bench::Clock;
using bench::CpuMs;
using bench::Median;
using bench::Memory;
using bench::Ms;
using bench::ReadMemory;

// `batch` sources of `length` ids each, ending with EOS, row after row.
std::vector<int32_t> BenchSource(int32_t length, int32_t batch, const ModelConfig& config) {
  return bench::BenchIds(length, batch, config.src_vocab_size, config.eos_id);
}

// on_token callback: stamps the time of every generated token of sentence 0 (greedy streams
// each step's tokens; beam search reports a sentence's tokens only when it finishes).
struct StepClock {
  std::vector<Clock::time_point>* stamps;
};

bool StampToken(void* user, int32_t sentence, int32_t, int32_t) {
  auto* clock = static_cast<StepClock*>(user);
  if (sentence == 0) clock->stamps->push_back(Clock::now());
  return true;
}

std::string WeightsDType(const Model& model) {
  TensorInfo info;
  if (model.Find("encoder.layers.0.fc1.weight", &info)) return DTypeName(info.dtype);
  return "?";
}

// The 5 largest logits, largest first (lowest id first on ties).
std::vector<std::pair<int32_t, float>> Top5(const float* logits, int32_t vocab) {
  std::vector<std::pair<int32_t, float>> top;
  for (int32_t v = 0; v < vocab; ++v) {
    const auto better = [](const std::pair<int32_t, float>& a, const std::pair<int32_t, float>& b) {
      return a.second > b.second || (a.second == b.second && a.first < b.first);
    };
    const std::pair<int32_t, float> e{v, logits[v]};
    if (top.size() < 5 || better(e, top.back())) {
      top.insert(std::upper_bound(top.begin(), top.end(), e, better), e);
      if (top.size() > 5) top.pop_back();
    }
  }
  return top;
}

nlohmann::json Top5Json(const std::vector<std::pair<int32_t, float>>& top) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : top) j.push_back({e.first, e.second});
  return j;
}

// "a,b,,c" -> {"a", "b", "", "c"} (an empty list gives one empty item, which callers refuse).
std::vector<std::string> CommaItems(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// tern bench --linear: shapes from -m MODEL's config (or paper base's), rows from --rows.
int BenchLinearCommand(const Args& args) {
  LinearBenchSettings s;
  int64_t d = 512, d_ff = 2048, vocab = 32000;
  if (args.has("model")) {
    LoadedModel loaded = LoadModel(args.get("model"), args.has("no-mmap"));
    const ModelConfig& config = loaded.model.config();
    d = config.d_model;
    d_ff = config.d_ff;
    vocab = config.tgt_vocab_size;
  }
  s.shapes = {{d, d}, {d_ff, d}, {d, d_ff}, {vocab, d}};
  if (args.has("rows")) {
    s.rows.clear();
    const std::string list = args.get("rows");
    for (const std::string& item : CommaItems(list)) {
      char* end = nullptr;
      const long long m = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || m < 1 || m > 4096) {
        throw UsageError("--rows takes a comma-separated list of row counts 1..4096, not \"" +
                         list + "\"");
      }
      s.rows.push_back(m);
    }
  }
  s.threads = static_cast<int32_t>(args.get_int("threads", 1, 1, 256));
  s.repeat = static_cast<int>(args.get_int("repeat", 20, 1, 100000));
  s.warmup = static_cast<int>(args.get_int("warmup", 3, 0, 100000));
  s.int4_block = args.get_int("int4-block", 32, 32, 1 << 20);
  if (s.int4_block % 32 != 0) throw UsageError("--int4-block must be a multiple of 32");
  s.working_set_bytes =
      static_cast<double>(args.get_int("working-set", 96, 0, 1 << 16)) * 1024.0 * 1024.0;
  s.json = args.has("json");
  s.gather_rows = args.get_int("gather", 0, 0, 1 << 24);
  if (s.gather_rows > 0 && s.json) throw UsageError("--gather prints a table; no --json");
  s.split = args.has("split");
  if (args.has("weights")) {
    if (s.split || s.gather_rows > 0)
      throw UsageError("--weights is for the table (not --split or --gather)");
    s.weights = 0;
    const std::string list = args.get("weights");
    for (const std::string& item : CommaItems(list)) {
      int found = -1;
      for (int i = 0; i < kLinearBenchWeightCount; ++i) {
        if (item == kLinearBenchWeights[i]) found = i;
      }
      if (found < 0) {
        std::string names;
        for (const char* name : kLinearBenchWeights)
          names += (names.empty() ? "" : ",") + std::string(name);
        throw UsageError("--weights takes a comma-separated list of " + names + ", not \"" + list +
                         "\"");
      }
      s.weights |= 1u << found;
    }
  }
  if (s.split && (s.threads < 2 || s.threads > 8))
    throw UsageError("--split needs --threads 2 to 8 (layers are cut for at most 8 threads)");
  if (s.split && s.gather_rows > 0)
    throw UsageError("--split and --gather are different benchmarks");
  return BenchLinear(s);
}

}  // namespace

int Bench(int argc, char** argv) {
  Args args(argc, argv,
            {"model", "threads", "backend", "kv-cache", "source-length", "prompt-length", "tokens",
             "batch", "beam", "repeat", "warmup", "rows", "int4-block", "working-set", "gather",
             "weights"},
            {"json", "no-mmap", "no-shortlist", "linear", "split", "help"}, {{"-m", "--model"}});
  if (args.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (args.has("linear")) return BenchLinearCommand(args);
  if (args.has("rows")) throw UsageError("--rows is for --linear");
  if (args.has("gather")) throw UsageError("--gather is for --linear");
  if (args.has("split")) throw UsageError("--split is for --linear");
  if (args.has("weights")) throw UsageError("--weights is for --linear");
  if (!args.has("model")) throw UsageError("--model is required");
  const std::string path = args.get("model");
  const int32_t threads = static_cast<int32_t>(args.get_int("threads", 1));
  const int32_t source_length = static_cast<int32_t>(args.get_int("source-length", 32));
  const int32_t tokens = static_cast<int32_t>(args.get_int("tokens", 32));
  const int32_t batch = static_cast<int32_t>(args.get_int("batch", 1));
  const int32_t beam = static_cast<int32_t>(args.get_int("beam", 1));
  const int repeat = static_cast<int>(args.get_int("repeat", 5));
  const int warmup = static_cast<int>(args.get_int("warmup", 1));
  const std::string backend_name = args.get("backend", "auto");
  if (threads < 1) throw UsageError("--threads must be >= 1");
  if (source_length < 1 || tokens < 1)
    throw UsageError("--source-length and --tokens must be >= 1");
  if (batch < 1 || beam < 1) throw UsageError("--batch and --beam must be >= 1");
  if (repeat < 1 || warmup < 0) throw UsageError("--repeat must be >= 1, --warmup >= 0");
  const std::string kv_cache = args.get("kv-cache", "fp32");
  if (kv_cache != "fp32" && kv_cache != "fp16") {
    throw UsageError("option --kv-cache must be fp32 or fp16, got \"" + kv_cache + "\"");
  }
  Backend backend = Backend::kAuto;
  if (backend_name == "xnnpack") {
    backend = Backend::kXnnpack;
  } else if (backend_name == "reference") {
    backend = Backend::kReference;
  } else if (backend_name != "auto") {
    throw UsageError("--backend must be auto, xnnpack or reference");
  }

  // Load + prepare, timed as one user-visible step.
  const Clock::time_point t_load = Clock::now();
  LoadedModel loaded = LoadModel(path, args.has("no-mmap"));
  const ModelConfig& config = loaded.model.config();
  if (config.architecture == Architecture::kDecoderOnly) {
    if (beam != 1 || args.has("source-length") || args.has("no-shortlist")) {
      throw UsageError("--beam, --source-length and --no-shortlist are for translation models");
    }
    LmBenchSettings lm;
    lm.path = path;
    lm.threads = threads;
    lm.prompt_length = static_cast<int32_t>(args.get_int("prompt-length", 128, 1, 1 << 20));
    lm.tokens = static_cast<int32_t>(args.get_int("tokens", 128));
    lm.batch = batch;
    lm.repeat = repeat;
    lm.warmup = warmup;
    lm.kv_cache = kv_cache == "fp16" ? CacheType::kFloat16 : CacheType::kFloat32;
    lm.backend = backend;
    lm.json = args.has("json");
    return BenchLanguageModel(lm, loaded, t_load);
  }
  if (args.has("prompt-length")) throw UsageError("--prompt-length is for language models");
  constexpr int32_t kLongSource = 128;
  const int32_t max_positions = static_cast<int32_t>(config.max_positions);
  if (source_length > max_positions || tokens > max_positions) {
    throw UsageError("--source-length and --tokens must be <= the model's max_positions (" +
                     std::to_string(max_positions) + ")");
  }
  Limits limits;
  limits.max_batch = batch;
  limits.beam_size = beam;
  limits.max_source_length = std::min(std::max(source_length, kLongSource), max_positions);
  limits.max_target_length = tokens;
  limits.backend = backend;
  limits.threads = threads;
  limits.kv_cache = kv_cache == "fp16" ? CacheType::kFloat16 : CacheType::kFloat32;
  auto need = Session::RequiredArenaBytes(loaded.model, limits);
  Check(need.status(), "arena size");
  CheckArenaFits(need.value());  // refused before allocating, as translate and generate do
  posix::ArenaMemory arena = AllocateArena(need.value());
  Session session;
  Check(session.Prepare(loaded.model, limits, arena.data(), arena.size()), "prepare");
  const double load_prepare_ms = Ms(t_load, Clock::now());

  EncoderDecoder& model = tern::internal::encoder_decoder(session);
  const TranslationState& state = tern::internal::translation_state(session);
  auto encode_ms = [&](int32_t length) {
    const std::vector<int32_t> src = BenchSource(length, batch, config);
    const std::vector<int32_t> lengths(static_cast<size_t>(batch), length);
    std::vector<double> times;
    for (int r = 0; r < warmup + repeat; ++r) {
      const Clock::time_point t0 = Clock::now();
      Check(model.Encode(src.data(), length, lengths.data(), batch), "encode");
      const Clock::time_point t1 = Clock::now();
      if (r >= warmup) times.push_back(Ms(t0, t1));
    }
    return Median(times);
  };

  // The translation: Encode + GreedyDecode or BeamSearch (= Session::TranslateIds) of exactly
  // `tokens` tokens per sentence.
  const std::vector<int32_t> src = BenchSource(source_length, batch, config);
  const std::vector<int32_t> src_lengths(static_cast<size_t>(batch), source_length);
  DecodingOptions options;
  options.min_length = tokens;
  options.max_length = tokens;
  options.beam_size = beam;
  std::vector<Clock::time_point> stamps;
  stamps.reserve(static_cast<size_t>(tokens) + 1);
  StepClock step_clock{&stamps};
  options.on_token = StampToken;
  options.user = &step_clock;
  std::vector<int32_t> out(static_cast<size_t>(tokens) * batch);
  std::vector<int32_t> out_lengths(static_cast<size_t>(batch));
  std::vector<float> out_scores(static_cast<size_t>(batch));
  auto decode = [&] {
    return beam > 1 ? BeamSearch(model, state, options, out.data(), tokens, out_lengths.data(),
                                 out_scores.data())
                    : GreedyDecode(model, state, options, out.data(), tokens, out_lengths.data());
  };
  // With a vocabulary shortlist, every run is timed with it and without it in turn
  // (interleaved, so both see the same machine): times[1] is without.
  struct Times {
    std::vector<double> totals, encodes, per_token, first_step, last_step, cpu_totals, cpu_encodes,
        cpu_per_token;
  } times[2];
  const bool shortlist = loaded.model.shortlist().present() && !args.has("no-shortlist");
  for (int r = 0; r < warmup + repeat; ++r) {
    for (int mode = shortlist ? 1 : 0; mode >= 0; --mode) {  // the shortlist run last
      model.UseShortlist(shortlist && mode == 0);
      Times& m = times[mode];
      stamps.clear();
      const double c0 = CpuMs();
      const Clock::time_point t0 = Clock::now();
      Check(model.Encode(src.data(), source_length, src_lengths.data(), batch), "encode");
      const Clock::time_point t1 = Clock::now();
      const double c1 = CpuMs();
      Check(decode(), "decode");
      const Clock::time_point t2 = Clock::now();
      const double c2 = CpuMs();
      for (int32_t b = 0; b < batch; ++b) {
        if (out_lengths[static_cast<size_t>(b)] != tokens) {
          throw std::runtime_error("sentence " + std::to_string(b) + ": generated " +
                                   std::to_string(out_lengths[static_cast<size_t>(b)]) +
                                   " tokens, expected " + std::to_string(tokens));
        }
      }
      if (r < warmup) continue;
      m.totals.push_back(Ms(t0, t2));
      m.encodes.push_back(Ms(t0, t1));
      m.cpu_totals.push_back(c2 - c0);
      m.cpu_encodes.push_back(c1 - c0);
      m.cpu_per_token.push_back((c2 - c1) / tokens);
      m.per_token.push_back(Ms(t1, t2) / tokens);
      if (beam == 1 && !stamps.empty()) {
        m.first_step.push_back(Ms(t1, stamps.front()));
        if (stamps.size() >= 2) m.last_step.push_back(Ms(stamps[stamps.size() - 2], stamps.back()));
      }
    }
  }
  const std::vector<double>& totals = times[0].totals;
  const std::vector<double>& encodes = times[0].encodes;
  const std::vector<double>& per_token = times[0].per_token;
  const std::vector<double>& first_step = times[0].first_step;
  const std::vector<double>& last_step = times[0].last_step;
  const std::vector<double>& cpu_totals = times[0].cpu_totals;
  const std::vector<double>& cpu_encodes = times[0].cpu_encodes;
  const std::vector<double>& cpu_per_token = times[0].cpu_per_token;
  const double encode_long = source_length == kLongSource              ? Median(encodes)
                             : limits.max_source_length >= kLongSource ? encode_ms(kLongSource)
                                                                       : -1.0;
  const double encode_32 =
      source_length == 32 ? Median(encodes) : encode_ms(std::min(32, max_positions));
  const double total = Median(totals);

  // Verification pass (greedy; untimed), driving DecodeStep directly: sentence 0's top-5
  // logits of the first and last step, EOS masked, argmax with the lowest id on ties; every
  // sentence's argmax must give GreedyDecode's ids.
  std::vector<std::pair<int32_t, float>> top_first, top_last;
  if (beam == 1) {
    Check(model.Encode(src.data(), source_length, src_lengths.data(), batch), "encode");
    int32_t* token = state.tokens;
    std::fill(token, token + batch, config.decoder_start_id);
    const int32_t vocab = static_cast<int32_t>(config.tgt_vocab_size);
    std::vector<float> row(static_cast<size_t>(vocab));
    for (int32_t t = 0; t < tokens; ++t) {
      const float* logits = nullptr;
      Check(model.DecodeStep(token, &logits), "decode step");
      for (int32_t b = 0; b < batch; ++b) {
        // With a shortlist the row holds its candidates' logits only: spread over the ids.
        const float* row_logits = logits + b * model.logits_stride();
        const Span<const int32_t> ids = model.row_candidates(b);
        if (ids.empty()) {
          std::copy(row_logits, row_logits + vocab, row.begin());
        } else {
          std::fill(row.begin(), row.end(), -std::numeric_limits<float>::infinity());
          for (size_t i = 0; i < ids.size(); ++i) row[static_cast<size_t>(ids[i])] = row_logits[i];
        }
        row[static_cast<size_t>(config.eos_id)] = -std::numeric_limits<float>::infinity();
        const auto top = Top5(row.data(), vocab);
        if (b == 0 && t == 0) top_first = top;
        if (b == 0 && t == tokens - 1) top_last = top;
        const int32_t expected = out[static_cast<size_t>(b) * tokens + t];
        if (top[0].first != expected) {
          throw std::runtime_error("sentence " + std::to_string(b) + " step " + std::to_string(t) +
                                   ": DecodeStep's argmax " + std::to_string(top[0].first) +
                                   " != GreedyDecode's " + std::to_string(expected));
        }
        token[b] = top[0].first;
      }
    }
  }
  const Memory memory = ReadMemory();

  nlohmann::ordered_json j;
  j["engine"] = "tern";
  j["model"] = path;
  j["model_bytes"] = loaded.model.size();
  j["weights_dtype"] = WeightsDType(loaded.model);
  j["backend"] = session.backend() == Backend::kXnnpack ? "xnnpack" : "reference";
  j["backend_report"] = session.backend_report();
  j["kernel_fallback_calls"] = model.kernel_fallback_calls();
  j["passes"] = model.passes();  // with a pool: how many ran without it (a busy machine)
  j["passes_without_pool"] = model.passes_without_pool();
  j["threads"] = threads;
  j["source_length"] = source_length;
  j["tokens"] = tokens;
  j["batch"] = batch;
  j["beam"] = beam;
  j["repeat"] = repeat;
  j["warmup"] = warmup;
  j["load_prepare_ms"] = load_prepare_ms;
  j["arena_bytes"] = arena.size();
  j["kv_cache"] = kv_cache;
  j["arena_huge_pages_advised"] = arena.huge_pages_advised();  // posix::ArenaMemory
  j["encode_ms_32"] = encode_32;
  if (encode_long >= 0.0) j["encode_ms_128"] = encode_long;
  j["encode_ms"] = Median(encodes);
  j["decode_ms_per_token"] = Median(per_token);
  j["decode_first_step_ms"] = Median(first_step);
  j["decode_last_step_ms"] = Median(last_step);
  j["total_ms"] = total;
  j["tokens_per_s"] = total > 0.0 ? static_cast<double>(batch) * tokens * 1000.0 / total : 0.0;
  j["total_ms_runs"] = totals;
  j["cpu_encode_ms"] = Median(cpu_encodes);
  j["cpu_decode_ms_per_token"] = Median(cpu_per_token);
  j["cpu_total_ms"] = Median(cpu_totals);
  j["shortlist"] = shortlist;
  if (shortlist) {
    double candidates = 0;
    for (int32_t b = 0; b < batch; ++b) candidates += model.shortlist_rows(b).size();
    j["shortlist_rows_per_sentence"] = candidates / batch;
    j["no_shortlist_decode_ms_per_token"] = Median(times[1].per_token);
    j["no_shortlist_total_ms"] = Median(times[1].totals);
    j["no_shortlist_cpu_decode_ms_per_token"] = Median(times[1].cpu_per_token);
  }
  j["peak_rss_bytes"] = memory.peak;
  j["rss_anon_bytes"] = memory.anon;
  j["rss_file_bytes"] = memory.file;
  j["source_ids"] = std::vector<int32_t>(src.begin(), src.begin() + source_length);
  j["ids"] = std::vector<int32_t>(out.begin(), out.begin() + tokens);  // sentence 0
  if (batch > 1) j["ids_batch"] = out;                                 // row after row
  if (beam == 1) {
    j["top5_first"] = Top5Json(top_first);
    j["top5_last"] = Top5Json(top_last);
  }

  if (args.has("json")) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const double mib = 1024.0 * 1024.0;
  std::printf("model            %s (%s weights, %.1f MiB)\n", path.c_str(),
              j["weights_dtype"].get<std::string>().c_str(),
              static_cast<double>(loaded.model.size()) / mib);
  std::printf("backend          %s\n", session.backend_report());
  std::printf("threads          %d; medians of %d runs after %d warm-up\n", threads, repeat,
              warmup);
  if (model.passes() > 0) {
    std::printf("thread pool      off in %llu of %llu passes (measured faster without it)\n",
                static_cast<unsigned long long>(model.passes_without_pool()),
                static_cast<unsigned long long>(model.passes()));
  }
  std::printf("load + prepare   %.1f ms\n", load_prepare_ms);
  std::printf(
      "arena            %.1f MiB (batch %d, beam %d, source %d, target %d tokens, %s K/V; %s)\n",
      static_cast<double>(arena.size()) / mib, batch, beam, limits.max_source_length,
      limits.max_target_length, kv_cache.c_str(),
      arena.huge_pages_advised() ? "huge pages advised" : "ordinary pages");
  std::printf("encode 32        %.2f ms\n", encode_32);
  if (encode_long >= 0.0) std::printf("encode 128       %.2f ms\n", encode_long);
  if (beam == 1) {
    std::printf("decode           %.2f ms/step (first step %.2f ms, last %.2f ms)\n",
                Median(per_token), Median(first_step), Median(last_step));
  } else {
    std::printf("decode           %.2f ms/step (beam %d)\n", Median(per_token), beam);
  }
  std::printf("translate        %.1f ms for %d x %d tokens from %d-token sources: %.1f tokens/s\n",
              total, batch, tokens, source_length, j["tokens_per_s"].get<double>());
  if (shortlist) {
    std::printf(
        "shortlist        %.0f of %d output rows per sentence; without it (interleaved):\n"
        "                 decode %.2f ms/step, translate %.1f ms\n",
        j["shortlist_rows_per_sentence"].get<double>(), config.tgt_vocab_size,
        Median(times[1].per_token), Median(times[1].totals));
  }
  std::printf("peak RSS         %.1f MiB (now: %.1f anon + %.1f file)\n",
              static_cast<double>(memory.peak) / mib, static_cast<double>(memory.anon) / mib,
              static_cast<double>(memory.file) / mib);
  return 0;
}

}  // namespace tern::cli
