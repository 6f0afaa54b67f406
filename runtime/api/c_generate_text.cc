// The C API's text generation: tern_generate_text over tern::TextGenerator (tern.hpp), whose
// tokenizer the generator handle loads on its first text call.
#include <cstring>

#include "runtime/api/c_api_internal.h"
#include "tern/tern.h"

namespace {

using tern::capi::Fail;
using tern::capi::Report;

struct TextBridge {
  tern_text_callback callback;
  void* user;
};

bool OnText(void* user, const tern::TextPiece& piece) {
  const auto* bridge = static_cast<const TextBridge*>(user);
  return bridge->callback(bridge->user, piece.text, piece.size, piece.token, piece.log_prob) != 0;
}

// The longest prefix of text[0..size) that fits in `room` bytes and ends at a character boundary.
size_t CutAtCharacter(const char* text, size_t size, size_t room) {
  if (size <= room) return size;
  size_t n = room;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

extern "C" {

tern_generate_text_options tern_default_generate_text_options(void) {
  const tern::TextGenerationOptions d;
  tern_generate_text_options o;
  o.generate = tern_default_generate_options();
  o.stop = nullptr;
  o.stop_count = 0;
  o.add_special_tokens = d.add_special_tokens ? 1 : 0;
  o.parse_special = d.parse_special ? 1 : 0;
  o.print_special = d.print_special ? 1 : 0;
  o.on_text = nullptr;
  o.user = nullptr;
  return o;
}

tern_status tern_generate_text(tern_generator* generator, const char* prompt,
                               const tern_generate_text_options* options, char* out,
                               size_t out_capacity, tern_text_result* result) {
  if (result != nullptr) std::memset(result, 0, sizeof *result);
  if (generator == nullptr || prompt == nullptr || out == nullptr || out_capacity == 0) {
    return Fail(tern::StatusCode::kInvalidArgument,
                "generator, prompt or out is null, or out_capacity is 0");
  }
  out[0] = '\0';
  const tern_generate_text_options o =
      options != nullptr ? *options : tern_default_generate_text_options();
  if (o.generate.on_token != nullptr) {
    return Fail(tern::StatusCode::kInvalidArgument,
                "options->generate.on_token is not called by tern_generate_text: use on_text");
  }
  if (!generator->text_loaded) {
    const tern::Status loaded = generator->text.Load(generator->model->model);
    if (!loaded.ok()) return Report(loaded);
    generator->text_loaded = true;
  }
  tern::TextGenerationOptions t;
  t.generation.max_new_tokens = o.generate.max_new_tokens;
  t.generation.stop_at_eos = o.generate.stop_at_eos != 0;
  t.generation.sampling.temperature = o.generate.temperature;
  t.generation.sampling.top_k = o.generate.top_k;
  t.generation.sampling.top_p = o.generate.top_p;
  t.generation.sampling.seed = o.generate.seed;
  t.stop = o.stop;
  t.stop_count = o.stop_count;
  t.add_special_tokens = o.add_special_tokens != 0;
  t.parse_special = o.parse_special != 0;
  t.print_special = o.print_special != 0;
  TextBridge bridge{o.on_text, o.user};
  if (o.on_text != nullptr) {
    t.on_text = OnText;
    t.user = &bridge;
  }
  tern::TextResult r;
  const tern::Status s = generator->text.Generate(generator->generator, prompt, t, &r);
  if (!s.ok()) return Report(s);
  const tern::Span<const char> text = generator->text.text();
  const size_t n = CutAtCharacter(text.data(), text.size(), out_capacity - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  if (result != nullptr) {
    result->text_length = text.size();
    result->prompt_tokens = r.prompt_tokens;
    result->new_tokens = r.new_tokens;
    result->ids = generator->text.ids().data();
    result->log_probs = generator->text.log_probs().data();
    result->finish = static_cast<tern_finish_reason>(r.finish);
  }
  if (n < text.size()) {
    return Fail(tern::StatusCode::kOutOfRange,
                "the continuation does not fit in the output buffer (result->text_length "
                "says how long it is)");
  }
  return TERN_OK;
}

}  // extern "C"
