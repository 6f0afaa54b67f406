// Fuzz target: the .tern loader and everything a loaded model feeds.
//
// Input: the bytes of a .tern file. Model::Load must either refuse them with a status or accept
// a model every later step can use: accessors, tokenizer bytes, the architecture check that
// RequiredArenaBytes / Prepare run first (a refusal there must be what a session says), then
// RequiredArenaBytes, Prepare (reference and XNNPACK backends, small limits) and a short greedy
// and beam translation. A byte-level BPE tokenizer table is checked by BpeTokenizer::FromModel;
// one it accepts must encode and decode texts of every kind without leaving its vocabulary; so
// must a SentencePiece model with a vocabulary map (format 1.8) that Tokenizer::LoadMapped
// accepts, and TranslationTokenizer (tern translate's text path) must load whatever it loads.
// Nothing here may crash, read outside the input or the arena, or hit undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/models/architectures.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/translation_tokenizer.h"
#include "tern/tern.hpp"
#include "tests/fuzz/fuzz_util.h"

namespace {

using tern::fuzz::Die;

// Arenas above this are skipped (the model is valid, just too big to be worth running here).
constexpr size_t kMaxArena = size_t{32} << 20;

void InsideInput(const void* p, uint64_t bytes, const tern::fuzz::AlignedCopy& in,
                 const char* what) {
  const auto* b = static_cast<const uint8_t*>(p);
  if (b < in.data() || b > in.data() + in.size() ||
      bytes > static_cast<uint64_t>(in.data() + in.size() - b)) {
    Die("a loaded model points outside its bytes", what);
  }
}

void RunSession(const tern::Model& model, tern::Backend backend, int32_t beam) {
  const tern::ModelConfig& c = model.config();
  tern::Limits limits;
  limits.max_batch = 2;
  limits.max_source_length = c.max_positions < 6 ? c.max_positions : 6;
  limits.max_target_length = c.max_positions < 5 ? c.max_positions : 5;
  limits.beam_size = beam;
  limits.backend = backend;
  auto need = tern::Session::RequiredArenaBytes(model, limits);
  if (!need.ok()) {
    // Only the XNNPACK backend may refuse a loaded model (e.g. an operator it cannot create);
    // the reference plan of a model that loaded must always work for limits this small.
    if (backend == tern::Backend::kReference)
      Die("RequiredArenaBytes refused a loaded model", need.status().message());
    return;
  }
  const size_t bytes = need.value();
  if (bytes > kMaxArena) return;
  std::vector<uint8_t> arena(bytes);
  {
    tern::Session small;
    const tern::Status s = small.Prepare(model, limits, arena.data(), bytes - 1);
    if (s.ok() && backend == tern::Backend::kReference)
      Die("Prepare accepted an arena one byte short");
  }
  tern::Session session;
  const tern::Status prepared = session.Prepare(model, limits, arena.data(), arena.size());
  if (!prepared.ok()) {
    if (backend == tern::Backend::kReference)
      Die("Prepare failed after RequiredArenaBytes succeeded", prepared.message());
    return;
  }
  if (session.arena_used_bytes() > bytes)
    Die("Prepare used more arena than RequiredArenaBytes said");

  // Two sentences of ids inside the source vocabulary, EOS last; the second is shorter.
  const int32_t n = limits.max_source_length;
  std::vector<int32_t> src(2 * static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    src[i] = (c.unk_id + 3 * i + 1) % c.src_vocab_size;
    src[n + i] = (c.bos_id + 5 * i) % c.src_vocab_size;
  }
  src[n - 1] = c.eos_id;
  const int32_t lengths[2] = {n, n > 1 ? n - 1 : 1};
  src[n + lengths[1] - 1] = c.eos_id;

  tern::DecodingOptions options;
  options.beam_size = beam;
  options.n_best = beam > 1 ? 2 : 1;
  const int64_t stride = limits.max_target_length;
  const int32_t rows = 2 * options.n_best;
  std::vector<int32_t> out(static_cast<size_t>(rows * stride), -7);
  std::vector<int32_t> out_lengths(static_cast<size_t>(rows), -7);
  std::vector<float> scores(static_cast<size_t>(rows));
  const tern::Status s = session.TranslateIds(src.data(), n, lengths, 2, options, out.data(),
                                              stride, out_lengths.data(), scores.data());
  if (!s.ok()) Die("TranslateIds failed on a prepared session", s.message());
  for (int32_t r = 0; r < rows; ++r) {
    if (out_lengths[r] < 0 || out_lengths[r] > stride) Die("an output length is out of range");
    for (int32_t i = 0; i < out_lengths[r]; ++i) {
      const int32_t id = out[static_cast<size_t>(r * stride + i)];
      if (id < 0 || id >= c.tgt_vocab_size) Die("an output id is outside the target vocabulary");
    }
  }
  // The one-sentence overload too, reusing the session.
  std::vector<int32_t> one(static_cast<size_t>(stride));
  size_t produced = 0;
  tern::DecodingOptions greedy;
  const tern::Status g =
      session.TranslateIds(tern::Span<const int32_t>(src.data(), static_cast<size_t>(n)),
                           tern::Span<int32_t>(one.data(), one.size()), &produced, greedy);
  if (!g.ok()) Die("TranslateIds (one sentence) failed", g.message());
  if (produced > one.size()) Die("TranslateIds produced more ids than the output holds");
}

void RunMappedTokenizer(const tern::Model& model) {
  const auto bytes = model.mapped_tokenizer();
  if (bytes.empty()) return;
  tern::Tokenizer t;
  const tern::Status loaded = t.LoadMapped(model);
  tern::TranslationTokenizer translation;
  const tern::Status both = translation.Load(model);
  if (loaded.ok() && !both.ok())
    Die("TranslationTokenizer refused a mapped tokenizer", both.message());
  if (!loaded.ok()) {
    if (loaded.message()[0] == '\0') Die("a mapped tokenizer refusal without a message");
    return;
  }
  const int32_t vocab = model.mapped_vocab_size();
  for (const char* text : {"", "abc 12 xyz", "\xe6\x97\xa5\xf0\x9f\x91\x8d e\xcc\x81"}) {
    std::vector<int32_t> ids;
    const tern::Status s = t.Encode(text, true, model.config().eos_id, &ids);
    if (!s.ok()) Die("a loaded mapped tokenizer failed to encode", s.message());
    for (const int32_t id : ids) {
      if (id < 0 || id >= vocab) Die("a mapped id is outside the vocabulary");
    }
    std::string back;
    const tern::Status d = t.Decode(ids.data(), ids.size(), &back);
    if (!d.ok()) Die("a loaded mapped tokenizer failed to decode its own ids", d.message());
  }
}

void RunBpeTokenizer(const tern::Model& model) {
  auto loaded = tern::BpeTokenizer::FromModel(model);
  if (!loaded.ok()) {
    if (loaded.status().message()[0] == '\0') Die("a tokenizer refusal without a message");
    return;
  }
  const tern::BpeTokenizer& t = loaded.value();
  const char* texts[] = {"", "abc 12 xyz", "I'M  don't\n\n  <s><m> x <r>  y<n>",
                         "\xe6\x97\xa5\xf0\x9f\x91\x8d e\xcc\x81 \xd9\xa3\xc2\xbd\t\r\n"};
  for (const char* text : texts) {
    for (const bool special : {false, true}) {
      tern::BpeEncodeOptions options;
      options.add_special_tokens = special;
      options.parse_special = !special;
      std::vector<int32_t> ids;
      const tern::Status s = t.Encode(text, options, &ids);
      if (!s.ok()) Die("a loaded BPE tokenizer failed to encode", s.message());
      for (const int32_t id : ids) {
        if (id < 0 || id >= t.vocab_size()) Die("an encoded id is outside the vocabulary");
      }
      std::string back;
      const tern::Status d =
          t.Decode(tern::Span<const int32_t>(ids.data(), ids.size()), special, &back);
      if (!d.ok()) Die("a loaded BPE tokenizer failed to decode its own ids", d.message());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tern::fuzz::AlignedCopy in(data, size);
  auto loaded = tern::Model::Load(in.data(), in.size());
  if (!loaded.ok()) {
    tern::fuzz::Refused(loaded.status().message());
    if (loaded.status().message()[0] == '\0') Die("a refusal without a message");
    return 0;
  }
  const tern::Model& model = loaded.value();

  for (size_t i = 0; i < model.tensor_count(); ++i) {
    const tern::TensorInfo t = model.tensor(i);
    if (t.name == nullptr || t.rank < 1 || t.rank > tern::kMaxTensorRank)
      Die("a tensor record escaped the checks");
    InsideInput(t.data, t.data_size, in, t.name);
    if (t.scales)
      InsideInput(t.scales, static_cast<uint64_t>(t.scale_count) * sizeof(float), in, t.name);
    tern::TensorInfo found;
    if (!model.Find(t.name, &found) || found.data != t.data)
      Die("Find does not find a listed tensor", t.name);
    (void)t.AsWeight();
  }
  if (model.Find("no such tensor", nullptr)) Die("Find found a tensor that is not there");

  const auto src_tok = model.source_tokenizer();
  const auto tgt_tok = model.target_tokenizer();
  if (!src_tok.empty()) InsideInput(src_tok.data(), src_tok.size(), in, "source tokenizer");
  if (!tgt_tok.empty()) InsideInput(tgt_tok.data(), tgt_tok.size(), in, "target tokenizer");
  if (!src_tok.empty()) {
    tern::Tokenizer tokenizer;  // SentencePiece parses untrusted bytes here (tern_translate_text)
    (void)tokenizer.Load(src_tok);
  }

  RunBpeTokenizer(model);
  RunMappedTokenizer(model);

  // Load checked the format only; a prepare checks the architecture first, and so does this.
  const tern::Status architecture = tern::ValidateArchitecture(model);
  if (!architecture.ok()) {
    tern::fuzz::Refused(architecture.message());
    if (architecture.message()[0] == '\0') Die("a refusal without a message");
    // The session (or generator) for this model must refuse it with the very same message.
    tern::Limits limits;
    limits.backend = tern::Backend::kReference;
    const auto need = model.config().architecture == tern::Architecture::kDecoderOnly
                          ? tern::Generator::RequiredArenaBytes(model, limits)
                          : tern::Session::RequiredArenaBytes(model, limits);
    if (need.ok()) Die("RequiredArenaBytes accepted a model the architecture check refused");
    if (std::strcmp(need.status().message(), architecture.message()) != 0)
      Die("RequiredArenaBytes refused with another message", need.status().message());
    return 0;
  }

  RunSession(model, tern::Backend::kReference, 1);
  RunSession(model, tern::Backend::kReference, 2);
  RunSession(model, tern::Backend::kXnnpack, 1);
  return 0;
}
