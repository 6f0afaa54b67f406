/* The C API for generation from C99: size, create, greedy and sampled continuations (alone and as
 * a batch of prompts of different lengths), streaming cancellation, every error path, and
 * threads generating at once from one shared model.
 * usage: c_generate_test GPT2.tern LLAMA.tern TRANSLATION.tern
 * (the GPT-2 and LLaMA fixtures and the pre_gelu parity fixture, converted by the tern CLI). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/tern.h"
#include "tests/runtime/api/c_test.h"

/* PyTorch's greedy continuations of the GPT-2 fixture's prompts
 * (tests/fixtures/checkpoints/gpt2, tools/fixtures/make_gpt2_fixture.py). */
static const int32_t kPrompt0[] = {25, 33, 29, 30, 34};
static const int32_t kPrompt1[] = {16, 41};
static const int32_t kGreedy0[] = {34, 34, 34, 14, 29, 41, 41, 39, 29, 29, 38, 32};
static const int32_t kGreedy1[] = {34, 26, 26, 26, 40, 40, 21, 26, 26, 7, 26, 7};
/* The LLaMA fixture's first prompt: 9 tokens, then EOS (tools/fixtures/make_llama_fixture.py). */
static const int32_t kLlamaPrompt[] = {1, 34, 38, 21, 33, 46};
static const int32_t kLlamaGreedy[] = {12, 41, 16, 22, 24, 34, 19, 41, 35};

static tern_limits Limits(void) {
  tern_limits limits = tern_default_limits();
  limits.max_batch = 2;
  limits.max_source_length = 8;
  limits.max_target_length = 24;
  return limits;
}

typedef struct {
  const tern_model* model;
  int ok;
} worker_args;

static void* worker(void* p) {
  worker_args* args = (worker_args*)p;
  tern_limits limits = Limits();
  size_t bytes = 0;
  args->ok = 0;
  if (tern_generator_required_arena_bytes(args->model, &limits, &bytes) != TERN_OK) return NULL;
  void* arena = malloc(bytes);
  tern_generator* generator = NULL;
  if (tern_generator_create(args->model, &limits, arena, bytes, &generator) == TERN_OK) {
    int all = 1;
    for (int round = 0; round < 10; ++round) {
      int32_t out[12];
      size_t n = 0;
      all &= tern_generate_ids(generator, kPrompt0, 5, NULL, out, 12, &n) == TERN_OK;
      all &= n == 12 && memcmp(out, kGreedy0, sizeof kGreedy0) == 0;
    }
    args->ok = all;
    tern_generator_free(generator);
  }
  free(arena);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s GPT2.tern LLAMA.tern TRANSLATION.tern\n", argv[0]);
    return 2;
  }
  tern_model* model = NULL;
  CHECK(tern_model_load_from_file(argv[1], &model) == TERN_OK);
  if (model == NULL) return 1;

  const tern_generate_options defaults = tern_default_generate_options();
  CHECK(defaults.max_new_tokens == 0 && defaults.temperature == 0.0f && defaults.top_k == 0 &&
        defaults.top_p == 1.0f && defaults.seed == 0 && defaults.stop_at_eos != 0 &&
        defaults.on_token == NULL);

  /* Sizing and creation; a translation session refuses the model and names what to use. */
  tern_limits limits = Limits();
  size_t need = 0;
  CHECK(tern_required_arena_bytes(model, &limits, &need) == TERN_FAILED_PRECONDITION);
  CHECK(strstr(tern_last_error(), "tern_generator_create") != NULL);
  CHECK(tern_generator_required_arena_bytes(model, &limits, &need) == TERN_OK);
  CHECK(need > 0);
  void* arena = malloc(need);
  tern_generator* generator = NULL;
  CHECK(tern_generator_create(model, &limits, arena, need - 1, &generator) == TERN_ARENA_TOO_SMALL);
  CHECK(generator == NULL);
  CHECK(tern_generator_create(model, &limits, arena, need, &generator) == TERN_OK);
  if (generator == NULL) return 1;

  /* Greedy: PyTorch's ids; max_new_tokens cuts them short. */
  int32_t out[24];
  size_t n = 0;
  CHECK(tern_generate_ids(generator, kPrompt0, 5, NULL, out, 12, &n) == TERN_OK);
  CHECK(n == 12 && memcmp(out, kGreedy0, sizeof kGreedy0) == 0);
  tern_generate_options options = tern_default_generate_options();
  options.max_new_tokens = 4;
  CHECK(tern_generate_ids(generator, kPrompt1, 2, &options, out, 24, &n) == TERN_OK);
  CHECK(n == 4 && memcmp(out, kGreedy1, 4 * sizeof(int32_t)) == 0);

  /* A batch of prompts of different lengths equals each alone. */
  const int32_t prompts[2 * 5] = {25, 33, 29, 30, 34, 16, 41, -1, -1, -1};
  const int32_t lengths[2] = {5, 2};
  int32_t batch_out[2 * 12];
  int32_t batch_lengths[2];
  options = tern_default_generate_options();
  options.max_new_tokens = 12;
  CHECK(tern_generate_ids_batch(generator, prompts, 5, lengths, 2, &options, batch_out, 12,
                                batch_lengths) == TERN_OK);
  CHECK(batch_lengths[0] == 12 && memcmp(batch_out, kGreedy0, sizeof kGreedy0) == 0);
  CHECK(batch_lengths[1] == 12 && memcmp(batch_out + 12, kGreedy1, sizeof kGreedy1) == 0);

  /* Sampling: a seed reproduces; row 0 of a batch equals the prompt alone; another seed differs;
   * top_k 1 is greedy whatever the temperature. */
  options = tern_default_generate_options();
  options.max_new_tokens = 16;
  options.stop_at_eos = 0;
  options.temperature = 1.2f;
  options.top_k = 20;
  options.top_p = 0.9f;
  options.seed = 7;
  int32_t a[16], b[16], c[16];
  size_t na = 0, nb = 0, nc = 0;
  CHECK(tern_generate_ids(generator, kPrompt1, 2, &options, a, 16, &na) == TERN_OK);
  CHECK(tern_generate_ids(generator, kPrompt1, 2, &options, b, 16, &nb) == TERN_OK);
  CHECK(na == 16 && nb == 16 && memcmp(a, b, sizeof a) == 0);
  const int32_t sampled_prompts[2 * 5] = {16, 41, -1, -1, -1, 25, 33, 29, 30, 34};
  const int32_t sampled_lengths[2] = {2, 5};
  int32_t sampled_out[2 * 16];
  CHECK(tern_generate_ids_batch(generator, sampled_prompts, 5, sampled_lengths, 2, &options,
                                sampled_out, 16, batch_lengths) == TERN_OK);
  CHECK(batch_lengths[0] == 16 && memcmp(sampled_out, a, sizeof a) == 0);
  options.seed = 8;
  CHECK(tern_generate_ids(generator, kPrompt1, 2, &options, c, 16, &nc) == TERN_OK);
  CHECK(nc == 16 && memcmp(a, c, sizeof a) != 0);
  options.top_k = 1;
  options.temperature = 3.0f;
  options.max_new_tokens = 12;
  CHECK(tern_generate_ids(generator, kPrompt1, 2, &options, c, 12, &nc) == TERN_OK);
  CHECK(nc == 12 && memcmp(c, kGreedy1, sizeof kGreedy1) == 0);

  /* Streaming: the callback sees each token and cancels. */
  options = tern_default_generate_options();
  int seen = 0;
  options.on_token = stop_after_two;
  options.user = &seen;
  CHECK(tern_generate_ids(generator, kPrompt0, 5, &options, out, 12, &n) == TERN_CANCELLED);
  CHECK(seen == 2);

  /* Errors: each one a status and a message naming the problem; the generator stays usable. */
  const int32_t bad[] = {25, 999};
  CHECK(tern_generate_ids(generator, bad, 2, NULL, out, 12, &n) == TERN_OUT_OF_RANGE);
  CHECK(strstr(tern_last_error(), "999") != NULL);
  CHECK(tern_generate_ids(generator, kPrompt0, 0, NULL, out, 12, &n) == TERN_OUT_OF_RANGE);
  const int32_t too_long[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(tern_generate_ids(generator, too_long, 9, NULL, out, 12, &n) == TERN_OUT_OF_RANGE);
  options = tern_default_generate_options();
  options.temperature = -1.0f;
  CHECK(tern_generate_ids(generator, kPrompt0, 5, &options, out, 12, &n) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "temperature") != NULL);
  options = tern_default_generate_options();
  options.top_p = 0.0f;
  CHECK(tern_generate_ids(generator, kPrompt0, 5, &options, out, 12, &n) == TERN_INVALID_ARGUMENT);
  options = tern_default_generate_options();
  options.max_new_tokens = 12;
  CHECK(tern_generate_ids(generator, kPrompt0, 5, &options, out, 5, &n) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "too small") != NULL);
  CHECK(tern_generate_ids(generator, NULL, 5, NULL, out, 12, &n) == TERN_INVALID_ARGUMENT);
  CHECK(tern_generate_ids(generator, kPrompt0, 5, NULL, out, 12, NULL) == TERN_INVALID_ARGUMENT);
  CHECK(tern_generate_ids(NULL, kPrompt0, 5, NULL, out, 12, &n) == TERN_INVALID_ARGUMENT);
  const int32_t three_lengths[3] = {5, 2, 2};
  CHECK(tern_generate_ids_batch(generator, prompts, 5, three_lengths, 3, NULL, batch_out, 12,
                                batch_lengths) == TERN_INVALID_ARGUMENT);
  CHECK(tern_generate_ids_batch(NULL, prompts, 5, lengths, 2, NULL, batch_out, 12, batch_lengths) ==
        TERN_INVALID_ARGUMENT);
  CHECK(tern_generate_ids(generator, kPrompt0, 5, NULL, out, 12, &n) == TERN_OK);
  CHECK(n == 12 && memcmp(out, kGreedy0, sizeof kGreedy0) == 0);

  tern_limits beam = limits;
  beam.beam_size = 2;
  CHECK(tern_generator_required_arena_bytes(model, &beam, &need) == TERN_NOT_SUPPORTED);
  tern_limits too_many = limits;
  too_many.max_target_length = 1000; /* the fixture has 32 positions */
  CHECK(tern_generator_required_arena_bytes(model, &too_many, &need) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "max_positions") != NULL);
  CHECK(tern_generator_required_arena_bytes(NULL, &limits, &need) == TERN_INVALID_ARGUMENT);
  tern_generator* none = NULL;
  CHECK(tern_generator_create(model, &limits, NULL, need, &none) == TERN_INVALID_ARGUMENT);
  CHECK(none == NULL);

  /* A translation model is not a language model. */
  tern_model* translation = NULL;
  CHECK(tern_model_load_from_file(argv[3], &translation) == TERN_OK);
  CHECK(tern_generator_required_arena_bytes(translation, &limits, &need) ==
        TERN_FAILED_PRECONDITION);
  CHECK(strstr(tern_last_error(), "tern_session_create") != NULL);
  tern_model_free(translation);

  /* LLaMA (rotary, RMSNorm, SwiGLU) through the same calls: PyTorch's ids, stopping at EOS. */
  tern_model* llama = NULL;
  CHECK(tern_model_load_from_file(argv[2], &llama) == TERN_OK);
  if (llama != NULL) {
    size_t llama_need = 0;
    CHECK(tern_generator_required_arena_bytes(llama, &limits, &llama_need) == TERN_OK);
    void* llama_arena = malloc(llama_need);
    tern_generator* llama_generator = NULL;
    CHECK(tern_generator_create(llama, &limits, llama_arena, llama_need, &llama_generator) ==
          TERN_OK);
    options = tern_default_generate_options();
    options.max_new_tokens = 12;
    CHECK(tern_generate_ids(llama_generator, kLlamaPrompt, 6, &options, out, 12, &n) == TERN_OK);
    CHECK(n == 9 && memcmp(out, kLlamaGreedy, sizeof kLlamaGreedy) == 0);
    tern_generator_free(llama_generator);
    free(llama_arena);
    /* fp16 K/V caches: a smaller arena, and the ids the float caches give on this fixture. */
    tern_limits half = limits;
    half.kv_cache = TERN_CACHE_FLOAT16;
    size_t half_need = 0;
    CHECK(tern_generator_required_arena_bytes(llama, &half, &half_need) == TERN_OK);
    CHECK(half_need > 0 && half_need < llama_need);
    void* half_arena = malloc(half_need);
    tern_generator* half_generator = NULL;
    CHECK(tern_generator_create(llama, &half, half_arena, half_need, &half_generator) == TERN_OK);
    if (half_generator != NULL) {
      n = 0;
      CHECK(tern_generate_ids(half_generator, kLlamaPrompt, 6, &options, out, 12, &n) == TERN_OK);
      CHECK(n == 9 && memcmp(out, kLlamaGreedy, sizeof kLlamaGreedy) == 0);
    }
    tern_generator_free(half_generator);
    free(half_arena);
    tern_model_free(llama);
  }

  /* Threads: one model, a generator each, the same ids as the single-threaded run. */
  enum { kThreads = 3 };
  pthread_t threads[kThreads];
  worker_args args[kThreads];
  for (int i = 0; i < kThreads; ++i) args[i].model = model;
  run_threads(threads, kThreads, worker, args, sizeof args[0]);
  for (int i = 0; i < kThreads; ++i) CHECK(args[i].ok);

  tern_generator_free(generator);
  tern_generator_free(NULL); /* like free(NULL) */
  free(arena);
  tern_model_free(model);
  return summary();
}
