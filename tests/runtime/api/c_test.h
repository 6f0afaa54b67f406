/* What the C API tests (c_api_test.c, c_generate_test.c) share, in C99: CHECK, which counts
 * passes and failures and reports a failure with tern_last_error(); the summary that ends main; a
 * streaming callback that cancels; and running a worker on several threads at once. */
#ifndef TERN_TESTS_RUNTIME_API_C_TEST_H_
#define TERN_TESTS_RUNTIME_API_C_TEST_H_

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "tern/tern.h"

static int failures = 0;
static int passes = 0;
#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (cond) {                                                                                \
      ++passes;                                                                                \
    } else {                                                                                   \
      ++failures;                                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              tern_last_error());                                                              \
    }                                                                                          \
  } while (0)

/* Prints the counts; the exit status of main. */
static inline int summary(void) {
  printf("%d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}

/* An on_token callback (translation or generation) that cancels after the second token; user
 * points at an int counting the tokens seen. */
static inline int stop_after_two(void* user, int32_t sequence, int32_t step, int32_t token) {
  int* seen = (int*)user;
  (void)sequence;
  (void)step;
  (void)token;
  return ++*seen < 2;
}

/* Runs worker on `count` threads at once, thread i on the i-th of the `size`-byte elements at
 * args, and waits for them all. */
static inline void run_threads(pthread_t* threads, int count, void* (*worker)(void*), void* args,
                               size_t size) {
  for (int i = 0; i < count; ++i) {
    pthread_create(&threads[i], NULL, worker, (char*)args + (size_t)i * size);
  }
  for (int i = 0; i < count; ++i) pthread_join(threads[i], NULL);
}

#endif /* TERN_TESTS_RUNTIME_API_C_TEST_H_ */
