// This machine's read bandwidth, for bench/lm.sh's "decode vs streaming the file once": THREADS
// threads each sum their own slice of a buffer far larger than the last-level cache, in wide
// loads with independent accumulators (what a decode step's GEMV does to its weights), and the
// median of PASSES passes is printed as JSON bytes per second.
//
// numpy's dot of two vectors, which bench/lm.sh used before, read less than tern's own decode
// step streams on an AMD EPYC (14.4 vs 18.7 GB/s): one thread's float FMA chain, not the memory,
// was its limit. The buffer is written first, so that its pages are real (an untouched anonymous
// mapping reads as the one shared zero page, from cache).
//
// The buffer is 2 MiB aligned and advised as transparent huge pages (MADV_HUGEPAGE), as tern's
// tools allocate their arenas (platforms/posix/arena_memory.h): with 4 KiB pages a stream pays a
// TLB miss per page, which in a virtual machine cost more than half the bandwidth.
//
// usage: read_bandwidth THREADS [MIB=1024] [PASSES=7]
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static const uint64_t* buffer;
static size_t words_per_thread;
static int passes;
static pthread_barrier_t barrier;
static volatile uint64_t sink;

static uint64_t SumSlice(const uint64_t* p, size_t n) {
  uint64_t s[8] = {0};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  }
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

static void* Reader(void* arg) {
  const size_t index = (size_t)(uintptr_t)arg;
  const uint64_t* slice = buffer + index * words_per_thread;
  uint64_t total = 0;
  for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms up
    pthread_barrier_wait(&barrier);
    total += SumSlice(slice, words_per_thread);
    pthread_barrier_wait(&barrier);
  }
  sink += total;
  return NULL;
}

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int Compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  const size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
  passes = argc > 3 ? atoi(argv[3]) : 7;
  if (threads < 1 || threads > 256 || mib < 64 || passes < 1 || passes > 100) {
    fprintf(stderr, "usage: read_bandwidth THREADS [MIB >= 64] [PASSES]\n");
    return 2;
  }
  const size_t bytes = mib << 20;
  words_per_thread = bytes / sizeof(uint64_t) / (size_t)threads / 8 * 8;
  uint64_t* data = NULL;
  if (posix_memalign((void**)&data, (size_t)2 << 20, bytes) != 0) {
    fprintf(stderr, "read_bandwidth: cannot allocate %zu MiB\n", mib);
    return 1;
  }
#ifdef MADV_HUGEPAGE
  madvise(data, bytes, MADV_HUGEPAGE);
#endif
  memset(data, 1, bytes);
  buffer = data;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  pthread_t* ids = calloc((size_t)threads, sizeof(pthread_t));
  for (int i = 0; i < threads; ++i) pthread_create(&ids[i], NULL, Reader, (void*)(uintptr_t)i);
  double* seconds = calloc((size_t)passes, sizeof(double));
  for (int pass = 0; pass <= passes; ++pass) {
    pthread_barrier_wait(&barrier);
    const double start = Now();
    pthread_barrier_wait(&barrier);
    if (pass > 0) seconds[pass - 1] = Now() - start;
  }
  for (int i = 0; i < threads; ++i) pthread_join(ids[i], NULL);
  qsort(seconds, (size_t)passes, sizeof(double), Compare);
  const double read = (double)words_per_thread * sizeof(uint64_t) * (double)threads;
  printf(
      "{\"name\": \"bandwidth\", \"threads\": %d, \"bytes_per_s\": %.0f, \"probe\": "
      "\"read_bandwidth.c\"}\n",
      threads, read / seconds[passes / 2]);
  free(seconds);
  free(ids);
  free(data);
  return 0;
}
