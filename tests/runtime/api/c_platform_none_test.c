/* The C API linked with the platform hook for builds without a file system (platforms/none,
 * TERN_PLATFORM=none): tern_model_load_from_file refuses with TERN_NOT_SUPPORTED and says to
 * load from memory; loading from memory and preparing a session work as on any platform.
 * usage: c_platform_none_test MODEL.tern (read here with stdio, as a board would copy flash) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tern/tern.h>

static int failures = 0;
#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tern\n", argv[0]);
    return 2;
  }
  tern_model* model = (tern_model*)&failures; /* must be reset to NULL on failure */
  CHECK(tern_model_load_from_file(argv[1], &model) == TERN_NOT_SUPPORTED);
  CHECK(model == NULL);
  CHECK(strstr(tern_last_error(), "no file system") != NULL);
  CHECK(strstr(tern_last_error(), "tern_model_load_from_memory") != NULL);
  CHECK(strstr(tern_last_error(), argv[1]) != NULL);

  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  const size_t padded = ((size_t)size + 63) / 64 * 64;
  void* bytes = aligned_alloc(64, padded);
  if (bytes == NULL || fread(bytes, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  fclose(f);

  CHECK(tern_model_load_from_memory(bytes, (size_t)size, &model) == TERN_OK);
  if (model != NULL) {
    tern_limits limits = tern_default_limits();
    limits.max_source_length = 8;
    limits.max_target_length = 8;
    size_t need = 0;
    CHECK(tern_required_arena_bytes(model, &limits, &need) == TERN_OK);
    CHECK(need > 0);
    void* arena = aligned_alloc(64, (need + 63) / 64 * 64);
    tern_session* session = NULL;
    CHECK(tern_session_create(model, &limits, arena, need, &session) == TERN_OK);
    tern_session_free(session);
    free(arena);
    tern_model_free(model);
  }
  free(bytes);
  if (failures == 0) printf("1 passed, 0 failed\n");
  return failures == 0 ? 0 : 1;
}
