// tern_soak: many translations through one prepared session, to show that nothing drifts.
//
//   tern_soak [--model FILE.tern] [--iterations N] [--warmup N] [--beam K] [--backend
//   auto|reference|xnnpack]
//             [--threads N] [--text] [--max-growth-kb N]
//
// Without --model it builds a small random encoder-decoder in memory (d_model 64, 4 heads,
// 2 + 2 layers, d_ff 256, vocabularies 37 / 41, int8 weights, the tokenizer fixtures embedded).
// It prepares one session, translates 16 fixed sources once to record the reference outputs,
// runs --warmup more translations, samples the resident set size (/proc/self/statm), then runs
// --iterations translations (source i % 16), comparing every output with its reference (ids,
// length and the score, bit for bit) and sampling RSS every 100 translations.
// --text goes through the C API's text path instead (tern_translate_text: SentencePiece
// tokenization, which allocates, around the allocation-free TranslateIds).
//
// Prints the time per translation, the RSS after warm-up, at the end and at its highest, and the
// drift from the first sample to the end (a leak shows as drift that grows with --iterations).
// Exits 1 when an output differs from its reference or RSS grew more than --max-growth-kb
// (default 1024) after warm-up.
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "tern/tern.h"
#include "tern/tern.hpp"
#include "tests/support/tiny_model.h"

namespace {

struct Args {
  std::string model;
  int64_t iterations = 10000;
  int64_t warmup = 200;
  int32_t beam = 1;
  int32_t threads = 1;
  tern::Backend backend = tern::Backend::kAuto;
  bool text = false;
  int64_t max_growth_kb = 1024;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "tern_soak: %s\nusage: tern_soak [--model FILE.tern] [--iterations N] [--warmup N] "
               "[--beam K]\n"
               "                 [--backend auto|reference|xnnpack] [--threads N] [--text] "
               "[--max-growth-kb N]\n",
               why);
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--model") {
      a.model = value();
    } else if (arg == "--iterations") {
      a.iterations = std::atoll(value().c_str());
    } else if (arg == "--warmup") {
      a.warmup = std::atoll(value().c_str());
    } else if (arg == "--beam") {
      a.beam = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      a.threads = std::atoi(value().c_str());
    } else if (arg == "--max-growth-kb") {
      a.max_growth_kb = std::atoll(value().c_str());
    } else if (arg == "--text") {
      a.text = true;
    } else if (arg == "--backend") {
      const std::string b = value();
      if (b == "auto")
        a.backend = tern::Backend::kAuto;
      else if (b == "reference")
        a.backend = tern::Backend::kReference;
      else if (b == "xnnpack")
        a.backend = tern::Backend::kXnnpack;
      else
        Usage("unknown backend");
    } else {
      Usage(("unknown argument " + arg).c_str());
    }
  }
  if (a.iterations < 1 || a.warmup < 0 || a.beam < 1 || a.threads < 1) Usage("bad numbers");
  return a;
}

// Resident set size in bytes, from /proc/self/statm (second field, in pages).
int64_t Rss() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Peak RSS (VmHWM) in bytes.
int64_t PeakRss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return -1;
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "tern_soak: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

tern::testing::AlignedBytes SmallModel() {
  tern::ModelConfig c = tern::testing::TinyConfig();
  c.d_model = 64;
  c.heads = 4;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_ff = 256;
  c.src_vocab_size = 37;
  c.tgt_vocab_size = 41;
  c.shared_embeddings = false;
  c.tied_output = true;
  c.embedding_scale = 8.0f;
  c.max_positions = 64;
  tern::convert::TernContents contents = tern::testing::RandomContents(c, 2024, tern::DType::kI8);
  const std::string dir = std::string(TERN_FIXTURES) + "/tokenizer/";
  contents.source_tokenizer = ReadFile(dir + "src37.model");
  contents.target_tokenizer = ReadFile(dir + "tgt41.model");
  return tern::testing::AlignedBytes(tern::convert::SerializeModel(contents));
}

struct Output {
  std::vector<int32_t> ids;  // n_best rows of max_target_length
  std::vector<int32_t> lengths;
  std::vector<float> scores;
  std::string text;
  bool operator==(const Output& o) const {
    return ids == o.ids && lengths == o.lengths && text == o.text &&
           std::memcmp(scores.data(), o.scores.data(), scores.size() * sizeof(float)) == 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  tern::testing::AlignedBytes bytes;
  if (args.model.empty()) {
    bytes = SmallModel();
  } else {
    bytes = tern::testing::AlignedBytes(ReadFile(args.model));
  }
  auto loaded = tern::Model::Load(bytes.data(), bytes.size());
  if (!loaded.ok()) {
    std::fprintf(stderr, "tern_soak: %s\n", loaded.status().message());
    return 1;
  }
  const tern::Model& model = loaded.value();
  const tern::ModelConfig& c = model.config();

  tern::Limits limits;
  limits.max_source_length = c.max_positions < 32 ? c.max_positions : 32;
  limits.max_target_length = c.max_positions < 32 ? c.max_positions : 32;
  limits.beam_size = args.beam;
  limits.backend = args.backend;
  limits.threads = args.threads;
  auto need = tern::Session::RequiredArenaBytes(model, limits);
  if (!need.ok()) {
    std::fprintf(stderr, "tern_soak: %s\n", need.status().message());
    return 1;
  }
  std::vector<uint8_t> arena(need.value());
  tern::Session session;
  tern::Status s = session.Prepare(model, limits, arena.data(), arena.size());
  if (!s.ok()) {
    std::fprintf(stderr, "tern_soak: %s\n", s.message());
    return 1;
  }

  // The text path: the C API over the same bytes, with its own session (and arena).
  tern_model* c_model = nullptr;
  tern_session* c_session = nullptr;
  std::vector<uint8_t> c_arena;
  if (args.text) {
    if (tern_model_load_from_memory(bytes.data(), bytes.size(), &c_model) != TERN_OK) {
      std::fprintf(stderr, "tern_soak: %s\n", tern_last_error());
      return 1;
    }
    tern_limits cl = tern_default_limits();
    cl.max_source_length = limits.max_source_length;
    cl.max_target_length = limits.max_target_length;
    cl.beam_size = limits.beam_size;
    size_t n = 0;
    if (tern_required_arena_bytes(c_model, &cl, &n) != TERN_OK) return 1;
    c_arena.resize(n);
    if (tern_session_create(c_model, &cl, c_arena.data(), n, &c_session) != TERN_OK) {
      std::fprintf(stderr, "tern_soak: %s\n", tern_last_error());
      return 1;
    }
  }

  // 16 fixed sources: ids (EOS last) of lengths 3..limits, or lowercase words for --text.
  constexpr int kSources = 16;
  std::vector<std::vector<int32_t>> sources(kSources);
  std::vector<std::string> texts(kSources);
  uint32_t rng = 12345;
  auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
  for (int k = 0; k < kSources; ++k) {
    const int32_t length =
        3 + static_cast<int32_t>(next() % static_cast<uint32_t>(limits.max_source_length - 2));
    for (int32_t i = 0; i + 1 < length; ++i) {
      int32_t id = static_cast<int32_t>(next() % static_cast<uint32_t>(c.src_vocab_size));
      if (id == c.eos_id) id = c.unk_id;
      sources[k].push_back(id);
    }
    sources[k].push_back(c.eos_id);
    for (int32_t w = 0; w < 1 + length / 6; ++w) {
      if (w) texts[k] += ' ';
      for (uint32_t l = 0; l < 2 + next() % 5; ++l)
        texts[k] += static_cast<char>('a' + next() % 26);
    }
  }

  tern::DecodingOptions options;
  options.beam_size = args.beam;
  const int32_t n_best = 1;
  const int64_t stride = limits.max_target_length;
  auto translate = [&](int k, Output* out) -> bool {
    if (args.text) {
      char buffer[1024];
      tern_translate_options o = tern_default_translate_options();
      o.beam_size = args.beam;
      const tern_status st =
          tern_translate_text(c_session, texts[k].c_str(), &o, buffer, sizeof buffer);
      if (st != TERN_OK) {
        std::fprintf(stderr, "tern_soak: %s\n", tern_last_error());
        return false;
      }
      out->text = buffer;
      return true;
    }
    out->ids.assign(static_cast<size_t>(n_best * stride), 0);
    out->lengths.assign(n_best, 0);
    out->scores.assign(n_best, 0.0f);
    const int32_t length = static_cast<int32_t>(sources[k].size());
    const tern::Status st =
        session.TranslateIds(sources[k].data(), length, &length, 1, options, out->ids.data(),
                             stride, out->lengths.data(), out->scores.data());
    if (!st.ok()) {
      std::fprintf(stderr, "tern_soak: %s\n", st.message());
      return false;
    }
    return true;
  };

  std::vector<Output> reference(kSources);
  for (int k = 0; k < kSources; ++k) {
    if (!translate(k, &reference[k])) return 1;
  }
  Output out;
  for (int64_t i = 0; i < args.warmup; ++i) {
    if (!translate(static_cast<int>(i % kSources), &out)) return 1;
  }
  Rss();  // the first read of /proc allocates stdio buffers: not the session's memory
  const int64_t rss_warm = Rss();
  int64_t rss_max = rss_warm, rss_min = rss_warm, rss_max_at = 0, rss_first = -1;
  int64_t mismatches = 0, produced_tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < args.iterations; ++i) {
    const int k = static_cast<int>(i % kSources);
    if (!translate(k, &out)) return 1;
    if (!(out == reference[k])) {
      if (mismatches++ < 5)
        std::fprintf(stderr,
                     "tern_soak: translation %" PRId64 " (source %d) differs from the first run\n",
                     i, k);
    }
    produced_tokens += args.text ? 0 : out.lengths[0];
    if ((i + 1) % 100 == 0) {
      const int64_t rss = Rss();
      if (rss_first < 0) rss_first = rss;
      if (rss > rss_max) rss_max_at = i + 1;
      rss_max = rss > rss_max ? rss : rss_max;
      rss_min = rss < rss_min ? rss : rss_min;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int64_t rss_end = Rss();
  const int64_t growth = rss_max - rss_warm;

  std::printf("model        %s (d_model %d, %d+%d layers, vocab %d/%d), arena %zu bytes\n",
              args.model.empty() ? "built-in small random model" : args.model.c_str(), c.d_model,
              c.encoder_layers, c.decoder_layers, c.src_vocab_size, c.tgt_vocab_size, arena.size());
  std::printf("backend      %s\n", session.backend_report());
  std::printf("path         %s, beam %d, %d threads\n",
              args.text ? "text (tern_translate_text)" : "ids (Session::TranslateIds)", args.beam,
              args.threads);
  std::printf("translations %" PRId64 " after %" PRId64 " warm-up, %.3f s, %.1f us each%s\n",
              args.iterations, args.warmup, seconds,
              1e6 * seconds / static_cast<double>(args.iterations),
              args.text ? "" : (", " + std::to_string(produced_tokens) + " tokens").c_str());
  std::printf("identical    %" PRId64 " of %" PRId64 " equal to the first run's output\n",
              args.iterations - mismatches, args.iterations);
  std::printf(
      "rss          after warm-up %.1f KiB, end %.1f KiB, min %.1f KiB, max %.1f KiB (first at "
      "translation %" PRId64 "), growth %+.1f KiB (limit %" PRId64 " KiB); peak (VmHWM) %.1f KiB\n",
      rss_warm / 1024.0, rss_end / 1024.0, rss_min / 1024.0, rss_max / 1024.0, rss_max_at,
      growth / 1024.0, args.max_growth_kb, PeakRss() / 1024.0);
  if (rss_first >= 0) {
    std::printf(
        "drift        %+.1f KiB from the first sample (after 100 translations) to the end\n",
        (rss_end - rss_first) / 1024.0);
  }
  if (c_session) tern_session_free(c_session);
  if (c_model) tern_model_free(c_model);
  const bool ok = mismatches == 0 && growth <= args.max_growth_kb * 1024;
  std::printf("result       %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
