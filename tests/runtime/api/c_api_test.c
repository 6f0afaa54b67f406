/* The C API from C99: load, size, create, translate ids and text, every error path, and
 * several threads translating at once with one shared model (results equal the
 * single-threaded ones); with a second model, the same weights with a vocabulary shortlist,
 * options.no_shortlist. usage: c_api_test MODEL.tern [SHORTLIST_MODEL.tern] (pre_gelu fixture
 * with tokenizers; the shortlist is tests/tools/c_api_test.sh's). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/tern.h"
#include "tests/runtime/api/c_test.h"

/* PyTorch's greedy ids for the fixture's first sentence (tests/fixtures/parity/pre_gelu). */
static const int32_t kSource[] = {22, 10, 24, 29, 28, 26, 2};
static const int32_t kExpected[] = {35, 30, 26, 30, 35, 30};

typedef struct {
  const tern_model* model;
  int ok;
  char text[256];
} worker_args;

static void* worker(void* p) {
  worker_args* args = (worker_args*)p;
  tern_limits limits = tern_default_limits();
  limits.max_source_length = 32;
  limits.max_target_length = 12;
  size_t bytes = 0;
  args->ok = 0;
  if (tern_required_arena_bytes(args->model, &limits, &bytes) != TERN_OK) return NULL;
  void* arena = malloc(bytes);
  tern_session* session = NULL;
  if (tern_session_create(args->model, &limits, arena, bytes, &session) == TERN_OK) {
    int all = 1;
    for (int round = 0; round < 20; ++round) {
      int32_t out[12];
      size_t n = 0;
      all &= tern_translate_ids(session, kSource, 7, NULL, out, 12, &n) == TERN_OK;
      all &= n == 6 && memcmp(out, kExpected, sizeof kExpected) == 0;
      all &= tern_translate_text(session, "hello tern", NULL, args->text, sizeof args->text) ==
             TERN_OK;
    }
    args->ok = all;
    tern_session_free(session);
  }
  free(arena);
  return NULL;
}

/* The shortlist model (c_api_test.sh): frequent token 30, source token 22 -> 35. Its candidates
 * for kSource are those and the special ids 0-3, so the parity output (which has 26) cannot
 * come out with the shortlist on, and must with no_shortlist. */
static void check_shortlist(const char* path) {
  tern_model* model = NULL;
  CHECK(tern_model_load_from_file(path, &model) == TERN_OK);
  if (model == NULL) return;
  tern_limits limits = tern_default_limits();
  limits.max_source_length = 16;
  limits.max_target_length = 12;
  size_t need = 0;
  CHECK(tern_required_arena_bytes(model, &limits, &need) == TERN_OK);
  void* arena = malloc(need);
  tern_session* session = NULL;
  CHECK(tern_session_create(model, &limits, arena, need, &session) == TERN_OK);
  if (session != NULL) {
    tern_translate_options options = tern_default_translate_options();
    int32_t out[12];
    size_t n = 0;
    CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_OK);
    CHECK(n > 0);
    for (size_t i = 0; i < n; ++i) CHECK(out[i] <= 3 || out[i] == 30 || out[i] == 35);
    options.no_shortlist = 1;
    CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_OK);
    CHECK(n == sizeof kExpected / sizeof kExpected[0]);
    CHECK(memcmp(out, kExpected, sizeof kExpected) == 0);
    tern_session_free(session);
  }
  free(arena);
  tern_model_free(model);
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: %s MODEL.tern [SHORTLIST_MODEL.tern]\n", argv[0]);
    return 2;
  }
  if (argc == 3) check_shortlist(argv[2]);
  CHECK(strlen(tern_version()) > 0);
  CHECK(strcmp(tern_status_string(TERN_ARENA_TOO_SMALL), "arena too small") == 0);

  tern_model* model = NULL;
  CHECK(tern_model_load_from_file("/nonexistent.tern", &model) == TERN_IO_ERROR);
  CHECK(model == NULL);
  CHECK(strstr(tern_last_error(), "/nonexistent.tern") != NULL);
  CHECK(tern_model_load_from_file(argv[1], &model) == TERN_OK);
  if (model == NULL) return 1;

  /* Memory loading: a copy in an aligned buffer. */
  FILE* f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* bytes = aligned_alloc(64, ((size_t)size + 63) / 64 * 64);
  CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  tern_model* from_memory = NULL;
  CHECK(tern_model_load_from_memory(bytes, (size_t)size, &from_memory) == TERN_OK);
  tern_model* truncated = NULL;
  CHECK(tern_model_load_from_memory(bytes, (size_t)size / 2, &truncated) == TERN_INVALID_MODEL);
  CHECK(truncated == NULL);
  CHECK(strstr(tern_last_error(), "truncated") != NULL);

  tern_limits limits = tern_default_limits();
  limits.max_source_length = 16;
  limits.max_target_length = 12;
  size_t need = 0;
  CHECK(tern_required_arena_bytes(model, &limits, &need) == TERN_OK);
  CHECK(need > 0);
  void* arena = malloc(need);
  tern_session* session = NULL;
  CHECK(tern_session_create(model, &limits, arena, need - 1, &session) == TERN_ARENA_TOO_SMALL);
  CHECK(session == NULL);
  CHECK(tern_session_create(model, &limits, arena, need, &session) == TERN_OK);

  int32_t out[12];
  size_t n = 0;
  CHECK(tern_translate_ids(session, kSource, 7, NULL, out, 12, &n) == TERN_OK);
  CHECK(n == 6 && memcmp(out, kExpected, sizeof kExpected) == 0);
  const int32_t bad[] = {22, 999, 2};
  CHECK(tern_translate_ids(session, bad, 3, NULL, out, 12, &n) == TERN_OUT_OF_RANGE);
  CHECK(strstr(tern_last_error(), "999") != NULL);
  CHECK(tern_translate_ids(session, kSource, 7, NULL, out, 5, &n) == TERN_INVALID_ARGUMENT);

  /* Options: streaming callback cancels; beam search needs a session planned for it. */
  tern_translate_options options = tern_default_translate_options();
  int seen = 0;
  options.on_token = stop_after_two;
  options.user = &seen;
  CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_CANCELLED);
  CHECK(seen == 2);
  /* A model without a vocabulary shortlist: no_shortlist (default 0: use one) changes nothing. */
  options = tern_default_translate_options();
  CHECK(options.no_shortlist == 0);
  int32_t plain[12], full[12];
  size_t plain_n = 0, full_n = 0;
  CHECK(tern_translate_ids(session, kSource, 7, &options, plain, 12, &plain_n) == TERN_OK);
  options.no_shortlist = 1;
  CHECK(tern_translate_ids(session, kSource, 7, &options, full, 12, &full_n) == TERN_OK);
  CHECK(plain_n == full_n && memcmp(plain, full, plain_n * sizeof(int32_t)) == 0);
  /* A forced first target token (a multilingual model's target language): off by default and
   * when zero-initialized; a token outside the target vocabulary is refused by name. */
  options = tern_default_translate_options();
  CHECK(options.force_bos == 0);
  options.force_bos = 1;
  options.forced_bos_id = 5;
  CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_OK);
  options.forced_bos_id = 999;
  CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "options.forced_bos_id = 999") != NULL);
  int32_t language = -1;
  CHECK(tern_model_language_token(model, "deu_Latn", &language) == TERN_FAILED_PRECONDITION);
  CHECK(strstr(tern_last_error(), "no language table") != NULL);
  CHECK(tern_model_language_token(model, NULL, &language) == TERN_INVALID_ARGUMENT);
  options = tern_default_translate_options();
  options.beam_size = 3;
  CHECK(tern_translate_ids(session, kSource, 7, &options, out, 12, &n) == TERN_INVALID_ARGUMENT);
  /* One setting with a bound: the message names the call's beam and the session's limit. */
  CHECK(strstr(tern_last_error(), "options.beam_size = 3") != NULL);
  CHECK(strstr(tern_last_error(), "limits.beam_size") != NULL);
  /* fp16 K/V caches: float32 by default; fp16 needs fewer bytes and translates the parity
   * source as float caches do (it has margins far above fp16's rounding). The bytes are compared
   * at 64 target tokens: at 12 the caches are a few KiB, and where the planner places them can
   * hide what fp16 saves. */
  CHECK(limits.kv_cache == TERN_CACHE_FLOAT32);
  tern_limits long_limits = limits;
  long_limits.max_target_length = 64;
  size_t long_need = 0, long_half_need = 0;
  CHECK(tern_required_arena_bytes(model, &long_limits, &long_need) == TERN_OK);
  long_limits.kv_cache = TERN_CACHE_FLOAT16;
  CHECK(tern_required_arena_bytes(model, &long_limits, &long_half_need) == TERN_OK);
  CHECK(long_half_need > 0 && long_half_need < long_need);
  tern_limits half_limits = limits;
  half_limits.kv_cache = TERN_CACHE_FLOAT16;
  size_t half_need = 0;
  CHECK(tern_required_arena_bytes(model, &half_limits, &half_need) == TERN_OK);
  CHECK(half_need > 0 && half_need <= need);
  void* half_arena = malloc(half_need);
  tern_session* half_session = NULL;
  CHECK(tern_session_create(model, &half_limits, half_arena, half_need, &half_session) == TERN_OK);
  if (half_session != NULL) {
    CHECK(tern_translate_ids(half_session, kSource, 7, NULL, out, 12, &n) == TERN_OK);
    CHECK(n == 6 && memcmp(out, kExpected, sizeof kExpected) == 0);
    tern_session_free(half_session);
  }
  free(half_arena);
  half_limits.kv_cache = (tern_cache_type)257; /* not wrapped into a valid value */
  CHECK(tern_required_arena_bytes(model, &half_limits, &half_need) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "limits.kv_cache = 257") != NULL);
  /* A target-token budget (tern::Limits::max_target_tokens): 0 by default; passed through
   * (below max_target_length it is refused by name; a budget plans smaller caches). */
  CHECK(limits.max_target_tokens == 0);
  tern_limits target_limits = long_limits;
  target_limits.kv_cache = TERN_CACHE_FLOAT32;
  target_limits.max_batch = 4;
  size_t budget_base_need = 0, target_need = 0;
  CHECK(tern_required_arena_bytes(model, &target_limits, &budget_base_need) == TERN_OK);
  target_limits.max_target_tokens = 64; /* one 64-token translation, not four */
  CHECK(tern_required_arena_bytes(model, &target_limits, &target_need) == TERN_OK);
  CHECK(target_need > 0 && target_need < budget_base_need);
  target_limits.max_target_tokens = 63;
  CHECK(tern_required_arena_bytes(model, &target_limits, &target_need) == TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "limits.max_target_tokens = 63") != NULL);
  tern_limits beam_limits = limits;
  beam_limits.beam_size = 3;
  size_t beam_need = 0;
  CHECK(tern_required_arena_bytes(model, &beam_limits, &beam_need) == TERN_OK);
  CHECK(beam_need > need);
  void* beam_arena = malloc(beam_need);
  tern_session* beam_session = NULL;
  CHECK(tern_session_create(model, &beam_limits, beam_arena, beam_need, &beam_session) == TERN_OK);
  CHECK(tern_translate_ids(beam_session, kSource, 7, &options, out, 12, &n) == TERN_OK);
  CHECK(n >= 1);
  options.n_best = 2;
  int32_t nbest_out[2 * 12];
  int32_t nbest_len[2];
  const int32_t one_len = 7;
  CHECK(tern_translate_ids_batch(beam_session, kSource, 7, &one_len, 1, &options, nbest_out, 12,
                                 nbest_len) == TERN_OK);
  CHECK(nbest_len[0] == (int32_t)n && memcmp(nbest_out, out, n * sizeof(int32_t)) == 0);
  tern_session_free(beam_session);
  free(beam_arena);

  /* Batch with padding equals one by one. */
  const int32_t batch_src[2 * 7] = {22, 10, 24, 29, 28, 26, 2, 9, 5, 26, 2, 0, 0, 0};
  const int32_t batch_len[2] = {7, 4};
  int32_t batch_out[2 * 12];
  int32_t batch_out_len[2];
  tern_limits batch_limits = limits;
  batch_limits.max_batch = 2;
  size_t batch_need = 0;
  CHECK(tern_required_arena_bytes(model, &batch_limits, &batch_need) == TERN_OK);
  void* batch_arena = malloc(batch_need);
  tern_session* batch_session = NULL;
  CHECK(tern_session_create(model, &batch_limits, batch_arena, batch_need, &batch_session) ==
        TERN_OK);
  CHECK(tern_translate_ids_batch(batch_session, batch_src, 7, batch_len, 2, NULL, batch_out, 12,
                                 batch_out_len) == TERN_OK);
  CHECK(batch_out_len[0] == 6 && memcmp(batch_out, kExpected, sizeof kExpected) == 0);
  tern_session_free(batch_session);
  free(batch_arena);

  /* Text: the tokenizers embedded in the file. */
  char text[256];
  CHECK(tern_translate_text(session, "hello tern", NULL, text, sizeof text) == TERN_OK);
  char again[256];
  CHECK(tern_translate_text(session, "hello tern", NULL, again, sizeof again) == TERN_OK);
  CHECK(strcmp(text, again) == 0);
  CHECK(tern_translate_text(session, "", NULL, text, sizeof text) == TERN_OK);
  CHECK(text[0] == '\0');
  CHECK(tern_translate_text(session, "bad \xC3\x28 utf8", NULL, text, sizeof text) ==
        TERN_INVALID_ARGUMENT);
  CHECK(strstr(tern_last_error(), "UTF-8") != NULL);
  char tiny[2];
  tern_status fit = tern_translate_text(session, "hello tern", NULL, tiny, sizeof tiny);
  CHECK(fit == TERN_OUT_OF_RANGE || (fit == TERN_OK && strlen(again) < 2));

  /* Threads: one model, a session each, same answers as the single-threaded run. */
  enum { kThreads = 4 };
  pthread_t threads[kThreads];
  worker_args args[kThreads];
  for (int i = 0; i < kThreads; ++i) args[i].model = model;
  run_threads(threads, kThreads, worker, args, sizeof args[0]);
  for (int i = 0; i < kThreads; ++i) {
    CHECK(args[i].ok);
    CHECK(strcmp(args[i].text, again) == 0);
  }

  /* Shared weights: a session created first packs them, the threads' sessions reuse them and
   * translate as before, in arenas without a packed copy. */
  tern_limits worker_limits = tern_default_limits();
  worker_limits.max_source_length = 32;
  worker_limits.max_target_length = 12;
  size_t own_bytes = 0, shared_bytes = 0, shared_arena = 0;
  CHECK(tern_required_arena_bytes(from_memory, &worker_limits, &own_bytes) == TERN_OK);
  CHECK(tern_shared_weights_bytes(from_memory, &worker_limits, &shared_bytes) == TERN_OK);
  CHECK(tern_model_share_weights(NULL, NULL, 0) == TERN_INVALID_ARGUMENT);
  void* shared = malloc(shared_bytes + 1);
  CHECK(tern_model_share_weights(from_memory, shared, shared_bytes) == TERN_OK);
  CHECK(tern_required_arena_bytes(from_memory, &worker_limits, &shared_arena) == TERN_OK);
  CHECK(shared_bytes == 0 ? shared_arena == own_bytes : shared_arena < own_bytes);
  void* first_arena = malloc(shared_arena);
  tern_session* first = NULL;
  CHECK(tern_session_create(from_memory, &worker_limits, first_arena, shared_arena, &first) ==
        TERN_OK);
  for (int i = 0; i < kThreads; ++i) args[i].model = from_memory;
  run_threads(threads, kThreads, worker, args, sizeof args[0]);
  for (int i = 0; i < kThreads; ++i) {
    CHECK(args[i].ok);
    CHECK(strcmp(args[i].text, again) == 0);
  }
  tern_session_free(first);
  free(first_arena);

  tern_session_free(session);
  free(arena);
  tern_model_free(from_memory);
  free(shared);
  tern_model_free(model);
  free(bytes);
  return summary();
}
