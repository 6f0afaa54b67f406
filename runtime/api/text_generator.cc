// tern::TextGenerator (tern.hpp): prompt text -> ids (TextTokenizer) -> Generator -> each new
// token's bytes -> TextStream (whole characters, stop strings) -> on_text and text().
#include <string>
#include <vector>

#include "runtime/api/session_internal.h"
#include "runtime/tokenizer/text_stream.h"
#include "runtime/tokenizer/text_tokenizer.h"
#include "tern/tern.hpp"

namespace tern {

struct TextGenerator::State {
  TextTokenizer tokenizer;
  bool loaded = false;
  TextStream stream;
  std::vector<std::string> stop;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> ids;
  std::vector<float> log_probs;
  std::string text;   // the continuation so far
  std::string piece;  // what the current token released
  // The call in progress (the token callback's view of it).
  const TextGenerationOptions* options = nullptr;
  Status failure;
  bool ended = false;  // by a stop string or the callback
  size_t seen = 0;     // tokens OnToken saw (Generate reports no count when it is cut short)
  FinishReason finish = FinishReason::kLength;
};

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kStopString:
      return "stop";
    case FinishReason::kCallback:
      return "callback";
  }
  return "unknown";
}

TextGenerator::TextGenerator() : state_(new State()) {}
TextGenerator::~TextGenerator() { delete state_; }

Status TextGenerator::Load(const Model& model) {
  state_->loaded = false;
  TERN_RETURN_IF_ERROR(state_->tokenizer.Load(model));
  state_->loaded = true;
  return Status::Ok();
}

const char* TextGenerator::tokenizer_kind() const { return state_->tokenizer.kind_name(); }

namespace {

// Generate's token callback: the token's bytes through the stream, the released text to the
// caller's callback. false ends generation (a stop string, the caller, or a failure).
bool OnToken(void* user, int32_t /*sequence*/, int32_t step, int32_t token) {
  auto* s = static_cast<TextGenerator::State*>(user);
  const TextGenerationOptions& o = *s->options;
  s->seen = static_cast<size_t>(step) + 1;
  Span<const uint8_t> bytes;
  const Status got = s->tokenizer.TokenBytes(token, o.print_special, &bytes);
  if (!got.ok()) {
    s->failure = got;
    return false;
  }
  bool stopped = false;
  s->stream.Next(bytes, &s->piece, &stopped);
  s->text.append(s->piece);
  if (o.on_text != nullptr) {
    const TextPiece piece{s->piece.data(), s->piece.size(), token,
                          s->log_probs[static_cast<size_t>(step)]};
    if (!o.on_text(o.user, piece)) {
      s->ended = true;
      s->finish = FinishReason::kCallback;
      return false;
    }
  }
  if (stopped) {
    s->ended = true;
    s->finish = FinishReason::kStopString;
    return false;
  }
  return true;
}

}  // namespace

Status TextGenerator::Generate(Generator& generator, const char* prompt,
                               const TextGenerationOptions& options, TextResult* result) {
  if (prompt == nullptr) return Status::Error(StatusCode::kInvalidArgument, "prompt is null");
  return Generate(generator, prompt, std::char_traits<char>::length(prompt), options, result);
}

Status TextGenerator::Generate(Generator& generator, const char* prompt, size_t prompt_size,
                               const TextGenerationOptions& options, TextResult* result) {
  State& s = *state_;
  s.text.clear();
  s.ids.clear();
  s.log_probs.clear();
  s.prompt_ids.clear();
  if (result == nullptr) return Status::Error(StatusCode::kInvalidArgument, "result is null");
  *result = TextResult();
  if (!s.loaded) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "TextGenerator::Load has not loaded a tokenizer");
  }
  if (prompt == nullptr && prompt_size > 0)
    return Status::Error(StatusCode::kInvalidArgument, "prompt is null");
  if (options.generation.on_token != nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "generation.on_token is not called on the text path: use on_text");
  }
  if (options.stop_count > 0 && options.stop == nullptr)
    return Status::Error(StatusCode::kInvalidArgument, "stop is null, stop_count %zu",
                         options.stop_count);
  s.stop.resize(options.stop_count);
  for (size_t i = 0; i < options.stop_count; ++i) {
    if (options.stop[i] == nullptr)
      return Status::Error(StatusCode::kInvalidArgument, "stop string %zu is null", i);
    s.stop[i].assign(options.stop[i]);
  }
  const size_t max_token = s.tokenizer.max_token_bytes();
  TERN_RETURN_IF_ERROR(s.stream.Start(s.stop, max_token));
  s.piece.reserve(s.stream.MaxPieceBytes());
  TERN_RETURN_IF_ERROR(s.tokenizer.EncodePrompt(prompt, prompt_size, options.add_special_tokens,
                                                options.parse_special, &s.prompt_ids));
  if (s.prompt_ids.empty()) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "the prompt has no tokens (an empty text without a BOS token)");
  }
  result->prompt_tokens = s.prompt_ids.size();
  const DecoderOnly& model = internal::decoder_only(generator);
  // The budget Generate applies: what is asked, and what still fits in the cache.
  const int64_t room =
      static_cast<int64_t>(model.capacity()) - static_cast<int64_t>(s.prompt_ids.size());
  const int32_t asked = options.generation.max_new_tokens;
  const int64_t budget = asked > 0 && asked < room ? asked : room;
  // Sized for the longest continuation the generator allows (its capacity), whatever this
  // prompt's length, and for the most text that many tokens can give (each byte a U+FFFD at
  // worst, 3 bytes): after the first request, only a longer prompt or stop string allocates.
  const size_t most = static_cast<size_t>(model.capacity() > 1 ? model.capacity() : 1);
  s.ids.reserve(most);
  s.log_probs.reserve(most);
  s.text.reserve(most * 3 * max_token + s.stream.MaxPieceBytes());
  s.ids.resize(static_cast<size_t>(budget > 1 ? budget : 1));
  s.log_probs.resize(s.ids.size());

  GenerationOptions g = options.generation;
  g.max_new_tokens = static_cast<int32_t>(s.ids.size());
  g.on_token = OnToken;
  g.user = &s;
  s.options = &options;
  s.failure = Status::Ok();
  s.ended = false;
  s.seen = 0;
  s.finish = FinishReason::kLength;
  size_t produced = 0;
  Status status = generator.Generate(Span<const int32_t>(s.prompt_ids.data(), s.prompt_ids.size()),
                                     Span<int32_t>(s.ids.data(), s.ids.size()), &produced, g,
                                     Span<float>(s.log_probs.data(), s.log_probs.size()));
  if (!s.failure.ok()) status = s.failure;
  if (status.code() == StatusCode::kCancelled && s.ended) {
    status = Status::Ok();
    produced = s.seen;
  }
  if (!status.ok()) {
    s.ids.clear();
    s.log_probs.clear();
    return status;
  }
  s.ids.resize(produced);
  s.log_probs.resize(produced);
  result->new_tokens = produced;
  if (!s.ended) {
    s.finish = options.generation.stop_at_eos && static_cast<int64_t>(produced) < budget
                   ? FinishReason::kEos
                   : FinishReason::kLength;
  }
  result->finish = s.finish;
  if (s.finish != FinishReason::kCallback) {
    s.stream.Finish(&s.piece);
    // The flush (an incomplete character as U+FFFD) can complete a stop string.
    if (s.stream.stopped()) result->finish = FinishReason::kStopString;
    if (!s.piece.empty()) {
      s.text.append(s.piece);
      if (options.on_text != nullptr) {
        options.on_text(options.user, TextPiece{s.piece.data(), s.piece.size(), -1, 0.0f});
      }
    }
  }
  return Status::Ok();
}

Span<const char> TextGenerator::text() const {
  return Span<const char>(state_->text.data(), state_->text.size());
}
Span<const int32_t> TextGenerator::prompt_ids() const {
  return Span<const int32_t>(state_->prompt_ids.data(), state_->prompt_ids.size());
}
Span<const int32_t> TextGenerator::ids() const {
  return Span<const int32_t>(state_->ids.data(), state_->ids.size());
}
Span<const float> TextGenerator::log_probs() const {
  return Span<const float>(state_->log_probs.data(), state_->log_probs.size());
}

}  // namespace tern
