// tern bench for language models: a batch of --batch prompts of --prompt-length tokens is
// prefilled, then --tokens tokens per prompt are generated greedily (EOS is a token like any
// other, so every run generates exactly that many, as the peers do).
//
// What is timed (steady_clock, medians over --repeat runs after --warmup runs):
//   load_prepare_ms      mmap + Model::Load + Generator::RequiredArenaBytes + arena + Prepare.
//   prefill_ms           DecoderOnly::Prefill of the batch: the prompt's tokens through every
//                        layer and the first logits; prefill_tokens_per_s from it.
//   decode_ms_per_token  the following tokens - 1 DecodeStep calls with their argmax, per step
//                        of the whole batch; decode_tokens_per_s counts every prompt's tokens.
//   total_ms             prefill + decode (what Generator::Generate runs); tokens_per_s from it.
// The prompts are deterministic (bench_util.h BenchIds over the vocabulary), and the generated
// ids of the timed loop must equal Generator::Generate's (checked once, untimed).
#include "tools/tern/bench_lm.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tools/tern/session_flags.h"

namespace tern::cli {

namespace {

using bench::Check;
using bench::Clock;
using bench::CpuMs;
using bench::Median;
using bench::Ms;

// Row b's argmax (lowest id on ties) into next[b].
void Argmax(const float* logits, int32_t batch, int32_t vocab, int32_t* next) {
  for (int32_t b = 0; b < batch; ++b) {
    const float* row = logits + static_cast<size_t>(b) * vocab;
    next[b] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
  }
}

}  // namespace

int BenchLanguageModel(const LmBenchSettings& s, LoadedModel& loaded,
                       bench::Clock::time_point t_load) {
  const ModelConfig& config = loaded.model.config();
  const int32_t batch = s.batch, prompt = s.prompt_length, tokens = s.tokens;
  if (static_cast<int64_t>(prompt) + tokens > config.max_positions) {
    throw UsageError("--prompt-length + --tokens must be <= the model's max_positions (" +
                     std::to_string(config.max_positions) + ")");
  }
  Limits limits;
  limits.max_batch = batch;
  limits.max_source_length = prompt;
  limits.max_target_length = prompt + tokens;
  limits.backend = s.backend;
  limits.threads = s.threads;
  limits.kv_cache = s.kv_cache;
  auto need = Generator::RequiredArenaBytes(loaded.model, limits);
  Check(need.status(), "arena size");
  CheckArenaFits(need.value());
  posix::ArenaMemory arena = AllocateArena(need.value());
  Generator generator;
  Check(generator.Prepare(loaded.model, limits, arena.data(), arena.size()), "prepare");
  const double load_prepare_ms = bench::Ms(t_load, Clock::now());

  DecoderOnly& model = tern::internal::decoder_only(generator);
  const int32_t vocab = config.tgt_vocab_size;
  const std::vector<int32_t> ids = bench::BenchIds(prompt, batch, vocab, -1);
  const std::vector<int32_t> lengths(static_cast<size_t>(batch), prompt);
  std::vector<int32_t> out(static_cast<size_t>(batch) * tokens);  // [batch, tokens]
  std::vector<int32_t> next(static_cast<size_t>(batch));
  std::vector<double> prefill, per_token, totals, cpu_prefill, cpu_per_token;
  for (int r = 0; r < s.warmup + s.repeat; ++r) {
    const double c0 = CpuMs();
    const Clock::time_point t0 = Clock::now();
    const float* logits = nullptr;
    Check(model.Prefill(ids.data(), prompt, lengths.data(), batch, &logits), "prefill");
    Argmax(logits, batch, vocab, next.data());
    const Clock::time_point t1 = Clock::now();
    const double c1 = CpuMs();
    for (int32_t t = 0;; ++t) {
      for (int32_t b = 0; b < batch; ++b) out[static_cast<size_t>(b) * tokens + t] = next[b];
      if (t + 1 == tokens) break;
      Check(model.DecodeStep(next.data(), &logits), "decode step");
      Argmax(logits, batch, vocab, next.data());
    }
    const Clock::time_point t2 = Clock::now();
    const double c2 = CpuMs();
    if (r < s.warmup) continue;
    prefill.push_back(Ms(t0, t1));
    cpu_prefill.push_back(c1 - c0);
    totals.push_back(Ms(t0, t2));
    if (tokens > 1) {
      per_token.push_back(Ms(t1, t2) / (tokens - 1));
      cpu_per_token.push_back((c2 - c1) / (tokens - 1));
    }
  }
  // The timed loop is greedy generation: Generator::Generate must give the same ids.
  GenerationOptions options;
  options.max_new_tokens = tokens;
  options.stop_at_eos = false;
  std::vector<int32_t> expected(out.size()), expected_lengths(static_cast<size_t>(batch));
  Check(generator.Generate(ids.data(), prompt, lengths.data(), batch, options, expected.data(),
                           tokens, expected_lengths.data()),
        "generate");
  if (expected != out) throw std::runtime_error("the timed loop's ids differ from Generate's");
  const bench::Memory memory = bench::ReadMemory();

  const double total = Median(totals), pre = Median(prefill), step = Median(per_token);
  nlohmann::ordered_json j;
  j["engine"] = "tern";
  j["model"] = s.path;
  j["model_bytes"] = loaded.model.size();
  j["backend"] = generator.backend() == Backend::kXnnpack ? "xnnpack" : "reference";
  j["backend_report"] = generator.backend_report();
  j["kernel_fallback_calls"] = model.kernel_fallback_calls();
  j["passes"] = model.passes();  // with a pool: how many ran without it (a busy machine)
  j["passes_without_pool"] = model.passes_without_pool();
  j["threads"] = s.threads;
  j["prompt_length"] = prompt;
  j["tokens"] = tokens;
  j["batch"] = batch;
  j["repeat"] = s.repeat;
  j["warmup"] = s.warmup;
  j["load_prepare_ms"] = load_prepare_ms;
  j["arena_bytes"] = arena.size();
  j["kv_cache"] = s.kv_cache == CacheType::kFloat16 ? "fp16" : "fp32";
  j["arena_huge_pages_advised"] = arena.huge_pages_advised();  // posix::ArenaMemory
  j["prefill_ms"] = pre;
  j["prefill_tokens_per_s"] = pre > 0.0 ? batch * prompt * 1000.0 / pre : 0.0;
  j["decode_ms_per_token"] = step;
  j["decode_tokens_per_s"] = step > 0.0 ? batch * 1000.0 / step : 0.0;
  j["total_ms"] = total;
  j["tokens_per_s"] = total > 0.0 ? static_cast<double>(batch) * tokens * 1000.0 / total : 0.0;
  j["cpu_prefill_ms"] = Median(cpu_prefill);
  j["cpu_decode_ms_per_token"] = Median(cpu_per_token);
  j["peak_rss_bytes"] = memory.peak;
  j["rss_anon_bytes"] = memory.anon;
  j["rss_file_bytes"] = memory.file;
  j["prompt_ids"] = std::vector<int32_t>(ids.begin(), ids.begin() + prompt);
  j["ids"] = std::vector<int32_t>(out.begin(), out.begin() + tokens);  // prompt 0
  if (batch > 1) j["ids_batch"] = out;
  if (s.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  const double mib = 1024.0 * 1024.0;
  std::printf("model            %s (decoder-only, %.1f MiB)\n", s.path.c_str(),
              static_cast<double>(loaded.model.size()) / mib);
  std::printf("backend          %s\n", generator.backend_report());
  std::printf("threads          %d; medians of %d runs after %d warm-up\n", s.threads, s.repeat,
              s.warmup);
  std::printf("load + prepare   %.1f ms\n", load_prepare_ms);
  std::printf("arena            %.1f MiB (batch %d, %d positions, %s K/V cache; %s)\n",
              static_cast<double>(arena.size()) / mib, batch, limits.max_target_length,
              s.kv_cache == CacheType::kFloat16 ? "fp16" : "fp32",
              arena.huge_pages_advised() ? "huge pages advised" : "ordinary pages");
  std::printf("prefill          %.2f ms for %d x %d tokens: %.1f tokens/s\n", pre, batch, prompt,
              j["prefill_tokens_per_s"].get<double>());
  std::printf("decode           %.2f ms/step: %.1f tokens/s\n", step,
              j["decode_tokens_per_s"].get<double>());
  std::printf("generate         %.1f ms for %d x %d tokens: %.1f tokens/s\n", total, batch, tokens,
              j["tokens_per_s"].get<double>());
  std::printf("peak RSS         %.1f MiB (now: %.1f anon + %.1f file)\n",
              static_cast<double>(memory.peak) / mib, static_cast<double>(memory.anon) / mib,
              static_cast<double>(memory.file) / mib);
  return 0;
}

}  // namespace tern::cli
