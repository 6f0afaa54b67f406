/* The C API's text generation from C99: tern_generate_text on a byte-level BPE model and a
 * SentencePiece model converted by the tern CLI: the text out equals the streamed pieces, which
 * are whole UTF-8 and come one per token with the ids and log-probs of the result; stop strings;
 * the callback stopping; an output buffer too small; BOS; the error paths.
 * usage: c_generate_text_test BPE.tern SENTENCEPIECE.tern NO_TOKENIZER.tern */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/tern.h"
#include "tests/runtime/api/c_test.h"

typedef struct {
  char text[4096];
  size_t size;
  int32_t tokens[64];
  float log_probs[64];
  int calls;
  int all_valid;
  int stop_after; /* > 0: return 0 at this many calls */
} recorder;

/* Well-formed UTF-8 (RFC 3629): no overlong forms, surrogates or code points above U+10FFFF. */
static int valid_utf8(const unsigned char* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || i + len > n) return 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (len > 1 && (s[i + 1] < lo || s[i + 1] > hi)) return 0;
    for (size_t k = 2; k < len; ++k)
      if ((s[i + k] & 0xC0) != 0x80) return 0;
    i += len;
  }
  return 1;
}

static int record(void* user, const char* text, size_t size, int32_t token, float log_prob) {
  recorder* r = (recorder*)user;
  if (r->size + size <= sizeof r->text) {
    memcpy(r->text + r->size, text, size);
    r->size += size;
  }
  if (!valid_utf8((const unsigned char*)text, size)) r->all_valid = 0;
  if (r->calls < 64) {
    r->tokens[r->calls] = token;
    r->log_probs[r->calls] = log_prob;
  }
  ++r->calls;
  return r->stop_after == 0 || r->calls < r->stop_after;
}

static tern_generator* create(const char* path, tern_model** model, void** arena) {
  tern_limits limits = tern_default_limits();
  limits.max_source_length = 32;
  limits.max_target_length = 32;
  size_t bytes = 0;
  *arena = NULL;
  tern_generator* generator = NULL;
  if (tern_model_load_from_file(path, model) != TERN_OK) return NULL;
  if (tern_generator_required_arena_bytes(*model, &limits, &bytes) != TERN_OK) return NULL;
  *arena = malloc(bytes);
  if (tern_generator_create(*model, &limits, *arena, bytes, &generator) != TERN_OK) return NULL;
  return generator;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s BPE.tern SENTENCEPIECE.tern NO_TOKENIZER.tern\n", argv[0]);
    return 2;
  }
  tern_model* model = NULL;
  void* arena = NULL;
  tern_generator* generator = create(argv[1], &model, &arena);
  CHECK(generator != NULL);
  if (generator == NULL) return summary();

  /* Streamed pieces = the text out; one callback per token with the result's ids and log-probs. */
  tern_generate_text_options options = tern_default_generate_text_options();
  CHECK(options.add_special_tokens == 1 && options.parse_special == 1 &&
        options.print_special == 0);
  options.generate.max_new_tokens = 20;
  options.generate.stop_at_eos = 0;
  static recorder r;
  r.all_valid = 1;
  options.on_text = record;
  options.user = &r;
  char out[4096];
  tern_text_result result;
  CHECK(tern_generate_text(generator, "Der Bahnhof 日本", &options, out, sizeof out, &result) ==
        TERN_OK);
  CHECK(result.finish == TERN_FINISH_LENGTH);
  CHECK(result.new_tokens == 20);
  CHECK(result.prompt_tokens > 0);
  CHECK(result.text_length == r.size && memcmp(out, r.text, r.size) == 0 && out[r.size] == '\0');
  CHECK(r.all_valid);
  CHECK(r.calls == 20 || (r.calls == 21 && r.tokens[20] == -1));
  int same = 1;
  for (int i = 0; i < 20; ++i) {
    same &= r.tokens[i] == result.ids[i] && r.log_probs[i] == result.log_probs[i];
    same &= result.log_probs[i] <= 0.0f;
  }
  CHECK(same);
  const size_t full_length = result.text_length;
  char full[4096];
  memcpy(full, out, full_length + 1);

  /* NULL options: the defaults (greedy, stop at EOS) to the end of the generator. */
  CHECK(tern_generate_text(generator, "Der Bahnhof 日本", NULL, out, sizeof out, NULL) == TERN_OK);

  /* A stop string: the first character of the text after its second byte that is not NUL. */
  size_t at = 2;
  while (at < full_length && (full[at] == '\0' || (full[at] & 0xC0) == 0x80)) ++at;
  CHECK(at < full_length);
  size_t char_length = 1;
  while (at + char_length < full_length && (full[at + char_length] & 0xC0) == 0x80) ++char_length;
  char stop[8] = {0};
  memcpy(stop, full + at, char_length);
  size_t first = 0;
  while (memcmp(full + first, stop, char_length) != 0) ++first;
  const char* stops[] = {stop};
  options.stop = stops;
  options.stop_count = 1;
  memset(&r, 0, sizeof r);
  r.all_valid = 1;
  CHECK(tern_generate_text(generator, "Der Bahnhof 日本", &options, out, sizeof out, &result) ==
        TERN_OK);
  CHECK(result.finish == TERN_FINISH_STOP);
  CHECK(result.text_length == first && memcmp(out, full, first) == 0);
  CHECK(r.size == first);
  options.stop = NULL;
  options.stop_count = 0;

  /* The callback stops generation: success, finish callback, the text so far. */
  memset(&r, 0, sizeof r);
  r.stop_after = 3;
  CHECK(tern_generate_text(generator, "Der Bahnhof 日本", &options, out, sizeof out, &result) ==
        TERN_OK);
  CHECK(result.finish == TERN_FINISH_CALLBACK && result.new_tokens == 3 && r.calls == 3);
  CHECK(result.text_length == r.size);
  options.on_text = NULL;

  /* Too small an output: what fits, at a character boundary, NUL-terminated; the full length. */
  char small[6];
  CHECK(tern_generate_text(generator, "Der Bahnhof 日本", &options, small, sizeof small, &result) ==
        TERN_OUT_OF_RANGE);
  CHECK(result.text_length == full_length);
  const size_t kept = strlen(small);
  CHECK(kept <= 5 && memcmp(small, full, kept) == 0);

  /* Errors. */
  CHECK(tern_generate_text(generator, NULL, &options, out, sizeof out, NULL) ==
        TERN_INVALID_ARGUMENT);
  CHECK(tern_generate_text(generator, "x", &options, out, 0, NULL) == TERN_INVALID_ARGUMENT);
  options.generate.on_token = stop_after_two;
  CHECK(tern_generate_text(generator, "x", &options, out, sizeof out, NULL) ==
        TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "on_text") != NULL);
  options.generate.on_token = NULL;
  CHECK(tern_generate_text(generator, "a\xff", &options, out, sizeof out, NULL) ==
        TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "UTF-8") != NULL);
  tern_generator_free(generator);
  free(arena);
  tern_model_free(model);

  /* SentencePiece: BOS before the prompt; whole UTF-8 out. */
  generator = create(argv[2], &model, &arena);
  CHECK(generator != NULL);
  if (generator != NULL) {
    options = tern_default_generate_text_options();
    options.generate.max_new_tokens = 24;
    options.generate.stop_at_eos = 0;
    memset(&r, 0, sizeof r);
    r.all_valid = 1;
    options.on_text = record;
    options.user = &r;
    CHECK(tern_generate_text(generator, "Der Bahnhof", &options, out, sizeof out, &result) ==
          TERN_OK);
    const size_t with_bos = result.prompt_tokens;
    CHECK(r.all_valid && result.text_length == r.size);
    options.add_special_tokens = 0;
    CHECK(tern_generate_text(generator, "Der Bahnhof", &options, out, sizeof out, &result) ==
          TERN_OK);
    CHECK(result.prompt_tokens + 1 == with_bos);
    tern_generator_free(generator);
  }
  free(arena);
  tern_model_free(model);

  /* No tokenizer in the file. */
  generator = create(argv[3], &model, &arena);
  CHECK(generator != NULL);
  if (generator != NULL) {
    CHECK(tern_generate_text(generator, "x", NULL, out, sizeof out, NULL) ==
          TERN_FAILED_PRECONDITION);
    CHECK(strstr(tern_last_error(), "no tokenizer") != NULL);
    tern_generator_free(generator);
  }
  free(arena);
  tern_model_free(model);
  return summary();
}
