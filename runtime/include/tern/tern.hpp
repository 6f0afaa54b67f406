// tern's C++ API.
//
//   Model: a verified view of .tern bytes the caller keeps alive (mapped file or flash).
//   Session: one translation context over a caller-provided arena. Prepare plans the arena for
//   the given Limits; after it, translating never allocates heap memory.
//
// Thread-safety: a Model is read-only and may be shared by any number of Sessions on any
// threads; a Session is used by one thread at a time.
//
// This header names only the API's own types (Model, Session, Generator, Limits, the options,
// Status / Result / Span): the model classes behind a Session live in runtime/models/ and are
// reached, by tests and tools only, through runtime/api/session_internal.h.
//
//   auto model = tern::Model::Load(bytes, size);
//   tern::Limits limits;  // batch 1, 128 source / target tokens
//   size_t need = tern::Session::RequiredArenaBytes(*model, limits).value();
//   std::vector<uint8_t> arena(need);
//   tern::Session session;
//   session.Prepare(*model, limits, arena.data(), arena.size());
//   session.TranslateIds(src, out, &out_length);
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/status.h"
#include "runtime/decoding/options.h"
#include "runtime/model/model.h"
#include "tern/limits.h"

namespace tern {

namespace internal {
struct SessionAccess;  // runtime/api/session_internal.h
}  // namespace internal

const char* Version();

// Packed weights shared by the Sessions and Generators of one model. The XNNPACK backend repacks
// every linear layer's weights at Prepare into its own layout; by default each session holds its
// own packed copy in its arena. With a SharedWeights, the first Session or Generator prepared with
// it packs them into the caller's memory, and every later one (with any limits, on any thread,
// once that Prepare has returned) uses them read-only: its arena holds only its activations,
// caches and operator records. The reference backend packs nothing (it reads the model's bytes,
// which sessions share anyway): RequiredBytes is 0 and sessions ignore the object.
//
//   size_t bytes = tern::SharedWeights::RequiredBytes(*model, limits).value();
//   std::vector<uint8_t> memory(bytes);
//   tern::SharedWeights shared;
//   shared.Init(memory.data(), memory.size());
//   size_t need = tern::Session::RequiredArenaBytes(*model, limits, &shared).value();
//   session_a.Prepare(*model, limits, arena_a, need, &shared);  // packs
//   session_b.Prepare(*model, limits, arena_b, need, &shared);  // reuses
class SharedWeights {
 public:
  SharedWeights();
  ~SharedWeights();
  SharedWeights(const SharedWeights&) = delete;
  SharedWeights& operator=(const SharedWeights&) = delete;

  // Memory the packed layers of this model take with these limits' backend (and this CPU: the
  // layout follows XNNPACK's micro-kernels); the other limits do not change it.
  static Result<size_t> RequiredBytes(const Model& model, const Limits& limits);
  // Binds the memory, which must stay valid and untouched while sessions use it; empty until a
  // session packs into it. Rebinding forgets what was packed: only with no session using it.
  Status Init(void* memory, size_t bytes);
  // Whether a session has packed the weights, and the bytes they take.
  bool packed() const;
  size_t used_bytes() const;

  static constexpr size_t kStorageBytes = 128;

 private:
  friend struct internal::SessionAccess;
  alignas(16) unsigned char storage_[kStorageBytes];
};

class Session {
 public:
  Session();
  ~Session();
  // The model object in storage_ holds pointers into the arena and, with threads > 1, a thread
  // pool: a copy would share or release them twice, so a Session is neither copied nor moved.
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Arena bytes Prepare needs for this model and these limits (alignment slack included); with
  // shared weights, without the packed copy of the weights.
  static Result<size_t> RequiredArenaBytes(const Model& model, const Limits& limits,
                                           const SharedWeights* shared = nullptr);

  // Plans the arena and resolves the weights. The arena must stay valid and untouched by the
  // caller while the session is used; the model's bytes too, and the shared weights' memory.
  Status Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                 SharedWeights* shared = nullptr);

  // Translates a batch: sentence b is src_ids[b * src_stride + i] for i < src_lengths[b]
  // (ids as the model expects them, EOS included). Output as GreedyDecode describes.
  // options.beam_size > 1 runs beam search, with any width from 1 (greedy) up to the
  // Limits::beam_size the session was prepared for (one setting with a bound: docs/api.md), and
  // writes options.n_best hypotheses per sentence (rows b * n_best + j, best first).
  // out_scores (optional): greedy: sum of log-probabilities; beam: that sum / length^penalty.
  Status TranslateIds(const int32_t* src_ids, int64_t src_stride, const int32_t* src_lengths,
                      int32_t batch, const DecodingOptions& options, int32_t* out_ids,
                      int64_t out_stride, int32_t* out_lengths, float* out_scores = nullptr);
  // One sentence.
  Status TranslateIds(Span<const int32_t> src, Span<int32_t> out, size_t* out_length,
                      const DecodingOptions& options = DecodingOptions());

  size_t arena_used_bytes() const;
  // Which kernels run (Limits::backend) and every fallback Prepare took, in one line, e.g.
  // "xnnpack, 1 thread: 97 linear layers: 97 fully_connected_nc_qd8_f32_qc8w; attention: ...".
  Backend backend() const;
  const char* backend_report() const;

  // Bytes reserved in the object for the model class behind it (session.cc checks that it
  // fits). In-object storage instead of a pointer: a Session allocates nothing, and this header
  // needs no internal class.
  static constexpr size_t kStorageBytes = 4096;

 private:
  friend struct internal::SessionAccess;
  alignas(16) unsigned char storage_[kStorageBytes];
};

// Text generation with a decoder-only model (GPT-2 style; docs/api.md): the Session of a
// language model. Prepare plans one arena (K/V cache, activations, sampler scratch); after it,
// Generate never allocates.
//
//   tern::Limits limits;                  // max_target_length: prompt + generated tokens
//   size_t need = tern::Generator::RequiredArenaBytes(*model, limits).value();
//   tern::Generator generator;
//   generator.Prepare(*model, limits, arena, need);
//   tern::GenerationOptions options;      // greedy; sampling.temperature/top_k/top_p/seed
//   options.max_new_tokens = 20;
//   generator.Generate(prompt, out, &out_length, options);
class Generator {
 public:
  Generator();
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // As Session's: with shared, the packed weights come from there.
  static Result<size_t> RequiredArenaBytes(const Model& model, const Limits& limits,
                                           const SharedWeights* shared = nullptr);
  Status Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                 SharedWeights* shared = nullptr);

  // Sequence b's prompt is prompts[b * prompt_stride + i], i < prompt_lengths[b]. Writes its new
  // tokens (without the prompt, without EOS) to out_ids[b * out_stride ...] and their count to
  // out_lengths[b]. out_stride must hold the most tokens a sequence may get: max_new_tokens, or
  // the session's capacity minus the shortest prompt when that is smaller (or max_new_tokens is 0).
  // out_log_probs (optional, laid out as out_ids): each new token's log-probability, log
  // softmax(logits / T)[token] over the whole vocabulary with T = sampling.temperature (1 when
  // greedy), before top-k / top-p (runtime/decoding/sampling.h TokenLogProbability).
  Status Generate(const int32_t* prompts, int64_t prompt_stride, const int32_t* prompt_lengths,
                  int32_t batch, const GenerationOptions& options, int32_t* out_ids,
                  int64_t out_stride, int32_t* out_lengths, float* out_log_probs = nullptr);
  // One prompt; out receives the new tokens (without EOS), out_log_probs (empty, or as long as
  // out) their log-probabilities.
  Status Generate(Span<const int32_t> prompt, Span<int32_t> out, size_t* out_length,
                  const GenerationOptions& options = GenerationOptions(),
                  Span<float> out_log_probs = Span<float>());

  size_t arena_used_bytes() const;
  Backend backend() const;
  const char* backend_report() const;

  static constexpr size_t kStorageBytes = 4096;  // as Session's (generator.cc checks it fits)

 private:
  friend struct internal::SessionAccess;
  alignas(16) unsigned char storage_[kStorageBytes];
};

// Text in, text out with a decoder-only model (docs/api.md): the tokenizer stored in the file
// (byte-level BPE or SentencePiece) encodes the prompt, a Generator continues it, and the
// continuation streams out in whole UTF-8 characters, with stop strings matched across tokens.
//
//   tern::TextGenerator text;
//   text.Load(*model);                      // the file's tokenizer
//   tern::TextGenerationOptions options;    // generation: max_new_tokens, sampling, stop_at_eos
//   const char* stop[] = {"\n\n"};
//   options.stop = stop;
//   options.stop_count = 1;
//   options.on_text = Print;                // (user, piece): whole UTF-8 pieces as generated
//   tern::TextResult result;
//   text.Generate(generator, "Once upon a time", options, &result);
//   text.text();                            // the continuation; ids(), log_probs() too

// A piece of the continuation, given to TextGenerationOptions::on_text once per new token.
struct TextPiece {
  const char* text;  // the text this token released: whole characters, valid UTF-8, possibly
  size_t size;       // empty (held back: half a character, or a stop string's possible start)
  int32_t token;     // the new token; -1 for one last call with the text held back at the end
  float log_prob;    // its log-probability (Generator::Generate's out_log_probs); 0 for -1
};
// Return false to stop: generation ends there and the call succeeds (FinishReason::kCallback).
using TextCallback = bool (*)(void* user, const TextPiece& piece);

enum class FinishReason : int32_t {
  kLength = 0,      // max_new_tokens, or the generator's max_target_length, reached
  kEos = 1,         // the model's EOS (stop_at_eos)
  kStopString = 2,  // a stop string completed (it and the text after it are not returned)
  kCallback = 3,    // on_text returned false
};
const char* FinishReasonName(FinishReason reason);  // "length", "eos", "stop", "callback"

struct TextGenerationOptions {
  // max_new_tokens, stop_at_eos, sampling; generation.on_token must stay null (on_text below).
  GenerationOptions generation;
  // Stop strings (UTF-8, non-empty), matched in the generated text across token boundaries.
  const char* const* stop = nullptr;
  size_t stop_count = 0;
  // The special tokens the tokenizer puts around a text (BOS: TextTokenizer in
  // runtime/tokenizer/text_tokenizer.h says which).
  bool add_special_tokens = true;
  // Special tokens written in the prompt ("<|endoftext|>") are those tokens (byte-level BPE);
  // false for untrusted input.
  bool parse_special = true;
  // Special tokens of the output (EOS with stop_at_eos false, ...) are printed as their text.
  bool print_special = false;
  TextCallback on_text = nullptr;
  void* user = nullptr;
};

struct TextResult {
  size_t prompt_tokens = 0;  // the prompt's ids, special tokens included
  size_t new_tokens = 0;     // generated, without EOS
  FinishReason finish = FinishReason::kLength;
};

// Holds the tokenizer and the buffers of the text path (they grow to the largest request so
// far and are reused: what it allocates is in docs/api.md). One thread at a time, like the
// Generator it drives; neither copied nor moved.
class TextGenerator {
 public:
  TextGenerator();
  ~TextGenerator();
  TextGenerator(const TextGenerator&) = delete;
  TextGenerator& operator=(const TextGenerator&) = delete;

  // The tokenizer stored in the model file (kFailedPrecondition when there is none). The model
  // must outlive this object.
  Status Load(const Model& model);
  // "byte-level BPE" or "SentencePiece" once loaded.
  const char* tokenizer_kind() const;

  // Continues the UTF-8 prompt with `generator` (prepared for the same model; batch 1).
  Status Generate(Generator& generator, const char* prompt, size_t prompt_size,
                  const TextGenerationOptions& options, TextResult* result);
  Status Generate(Generator& generator, const char* prompt, const TextGenerationOptions& options,
                  TextResult* result);

  // Of the last Generate, valid until the next: the continuation (exactly what on_text got, in
  // order), the prompt's ids, the new ids and their log-probabilities.
  Span<const char> text() const;
  Span<const int32_t> prompt_ids() const;
  Span<const int32_t> ids() const;
  Span<const float> log_probs() const;

  struct State;  // runtime/api/text_generator.cc

 private:
  State* state_;
};

}  // namespace tern
