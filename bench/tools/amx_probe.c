// What the tile unit's instructions cost on this CPU (docs/benchmarks.md, session 31): TSC ticks
// per tdpbusd in one dependent chain and in 2 and 4 independent ones, per tileloadd from L1, and
// per tile load that reads a buffer just written by 1 KiB of vector stores (as tern's AMX loops
// load the weight tiles they unpack) against one written a step earlier.
//   cc -O2 -mamx-tile -mamx-int8 -mavx512f -mavx512bw bench/tools/amx_probe.c -o amx_probe
//   ./amx_probe     (Linux, a CPU with AMX; three repetitions)
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>
struct __attribute__((aligned(64))) Cfg {
  uint8_t p, s, r[14];
  uint16_t c[16];
  uint8_t rows[16];
};
static uint8_t buf[8][1024] __attribute__((aligned(64)));
#define N 20000
#define T(x) asm volatile(x ::: "memory")
int main(void) {
  if (syscall(SYS_arch_prctl, 0x1023, 18)) {
    puts("no AMX");
    return 1;
  }
  struct Cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.p = 1;
  for (int i = 0; i < 8; ++i) {
    cfg.c[i] = 64;
    cfg.rows[i] = 16;
  }
  _tile_loadconfig(&cfg);
  memset(buf, 1, sizeof buf);
  asm volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(buf[4]), "r"((int64_t)64));
  asm volatile("tileloadd (%0,%1,1), %%tmm5" ::"r"(buf[5]), "r"((int64_t)64));
  asm volatile("tileloadd (%0,%1,1), %%tmm6" ::"r"(buf[6]), "r"((int64_t)64));
  asm volatile("tileloadd (%0,%1,1), %%tmm7" ::"r"(buf[7]), "r"((int64_t)64));
  for (int rep = 0; rep < 3; ++rep) {
    uint64_t t0 = __rdtsc();
    for (int i = 0; i < N; ++i) T("tdpbusd %%tmm6, %%tmm4, %%tmm0");
    uint64_t t1 = __rdtsc();
    for (int i = 0; i < N; ++i) {
      T("tdpbusd %%tmm6, %%tmm4, %%tmm0");
      T("tdpbusd %%tmm6, %%tmm5, %%tmm2");
    }
    uint64_t t2 = __rdtsc();
    for (int i = 0; i < N; ++i) {
      T("tdpbusd %%tmm6, %%tmm4, %%tmm0");
      T("tdpbusd %%tmm7, %%tmm4, %%tmm1");
      T("tdpbusd %%tmm6, %%tmm5, %%tmm2");
      T("tdpbusd %%tmm7, %%tmm5, %%tmm3");
    }
    uint64_t t3 = __rdtsc();
    for (int i = 0; i < N; ++i)
      asm volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(buf[0]), "r"((int64_t)64) : "memory");
    uint64_t t4 = __rdtsc();
    __m512i v = _mm512_set1_epi8(1);
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < 16; ++j) _mm512_store_si512((void*)(buf[i & 1] + 64 * j), v);
      asm volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(buf[i & 1]), "r"((int64_t)64) : "memory");
      T("tdpbusd %%tmm6, %%tmm4, %%tmm0");
    }
    uint64_t t5 = __rdtsc();
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < 16; ++j) _mm512_store_si512((void*)(buf[2 + (i & 1)] + 64 * j), v);
      asm volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(buf[(i + 1) & 1]), "r"((int64_t)64)
                   : "memory");
      T("tdpbusd %%tmm6, %%tmm4, %%tmm0");
    }
    uint64_t t6 = __rdtsc();
    printf(
        "TSC ticks per: tdpbusd chain %.1f | 2 chains %.1f per op | 4 chains %.1f per op | "
        "tileloadd L1 %.1f | 1 KiB stores + load same buf + tdpbusd %.1f | stores elsewhere %.1f\n",
        (double)(t1 - t0) / N, (double)(t2 - t1) / (2.0 * N), (double)(t3 - t2) / (4.0 * N),
        (double)(t4 - t3) / N, (double)(t5 - t4) / N, (double)(t6 - t5) / N);
  }
  _tile_release();
  return 0;
}
