// How fast one row of x times int4 weight rows (two nibbles a byte, rows contiguous, as tern's
// arena copy holds them) streams the weights from memory, by the order the rows are read in
// (docs/benchmarks.md, session 32). The loops are tern's VNNI one-row loops reduced to their
// memory traffic and arithmetic (vpdpbusd on the nibbles, vpsadbw for the weight sums); the
// layers cycle through 768 MiB on transparent huge pages.
//   g++ -O2 -march=sapphirerapids bench/tools/int4_row_order.cc -o int4_row_order
//   ./int4_row_order [rows] [cols]     (default 8192 x 2048; an AVX-512 VNNI CPU)
#include <immintrin.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void Dp(__m512i& acc, __m512i w, __m512i x) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(w), "v"(x));
}
__m512i Nib(const uint8_t* b, __m512i mask, __m512i flip) {
  const __m512i v =
      _mm512_maskz_broadcast_i64x4(0xFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  return _mm512_ternarylogic_epi32(v, mask, flip, 0x6A);
}
int32_t Sum(__m512i a) {  // (maskz forms and no _mm512_reduce_*: GCC 12's -Wall)
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, a);
  int32_t sum = 0;
  for (int32_t v : lanes) sum += v;
  return sum;
}

struct Layer {
  const uint8_t* w;
  int64_t rows, cols;
  const int8_t* x;
  int32_t* y;
};

const __m512i kMask =
    _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x0F), _mm256_set1_epi8(-16), 1);
const __m512i kFlip =
    _mm512_maskz_inserti64x4(0xFF, _mm512_set1_epi8(0x08), _mm256_set1_epi8(-128), 1);

// Four weight rows side by side, 32 bytes of each per step (tern's loops before session 32),
// the four rows `ahead` rows on prefetched a share per step (ahead 0: none).
void SideBySide(const Layer& c, int64_t ahead, int) {
  const int64_t rb = c.cols / 2, steps = c.cols / 64, lines = 4 * rb / 64;
  const int64_t per = (lines + steps - 1) / steps;
  const __m512i z = _mm512_setzero_si512();
  for (int64_t r = 0; r < c.rows; r += 4) {
    const uint8_t* r0 = c.w + r * rb;
    const uint8_t* pf = c.w + (r + ahead) * rb;
    const bool prefetch = ahead > 0 && r + ahead + 4 <= c.rows;
    __m512i a0 = z, a1 = z, a2 = z, a3 = z, s0 = z, s1 = z, s2 = z, s3 = z;
    for (int64_t s = 0; s < steps; ++s) {
      if (prefetch) {
        for (int64_t l = s * per; l < (s + 1) * per && l < lines; ++l) {
          _mm_prefetch(reinterpret_cast<const char*>(pf) + 64 * l, _MM_HINT_T0);
        }
      }
      const __m512i w0 = Nib(r0 + s * 32, kMask, kFlip), w1 = Nib(r0 + rb + s * 32, kMask, kFlip);
      const __m512i w2 = Nib(r0 + 2 * rb + s * 32, kMask, kFlip);
      const __m512i w3 = Nib(r0 + 3 * rb + s * 32, kMask, kFlip);
      s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
      s1 = _mm512_add_epi64(s1, _mm512_sad_epu8(w1, z));
      s2 = _mm512_add_epi64(s2, _mm512_sad_epu8(w2, z));
      s3 = _mm512_add_epi64(s3, _mm512_sad_epu8(w3, z));
      const __m512i xv = _mm512_load_si512(c.x + s * 64);
      Dp(a0, w0, xv);
      Dp(a1, w1, xv);
      Dp(a2, w2, xv);
      Dp(a3, w3, xv);
    }
    c.y[r] = Sum(a0) + Sum(s0);
    c.y[r + 1] = Sum(a1) + Sum(s1);
    c.y[r + 2] = Sum(a2) + Sum(s2);
    c.y[r + 3] = Sum(a3) + Sum(s3);
  }
}

// Each row front to back before the next (the layer one sequential stream; tern's loops since
// session 32), prefetching `ahead` bytes on (0: none), into L1 (hint 0) or L2 (hint 2).
void OneAfterAnother(const Layer& c, int64_t ahead, int hint) {
  const int64_t rb = c.cols / 2, steps = c.cols / 64;
  const uint8_t* end = c.w + c.rows * rb;
  const __m512i z = _mm512_setzero_si512();
  for (int64_t r = 0; r < c.rows; ++r) {
    const uint8_t* p = c.w + r * rb;
    __m512i a0 = z, a1 = z, s0 = z, s1 = z;
    for (int64_t s = 0; s < steps; s += 2) {
      const uint8_t* q = p + s * 32;
      if (ahead > 0 && end - q > ahead) {
        if (hint == 0) _mm_prefetch(reinterpret_cast<const char*>(q) + ahead, _MM_HINT_T0);
        if (hint == 2) _mm_prefetch(reinterpret_cast<const char*>(q) + ahead, _MM_HINT_T2);
      }
      const __m512i w0 = Nib(q, kMask, kFlip), w1 = Nib(q + 32, kMask, kFlip);
      s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(w0, z));
      s1 = _mm512_add_epi64(s1, _mm512_sad_epu8(w1, z));
      Dp(a0, w0, _mm512_load_si512(c.x + s * 64));
      Dp(a1, w1, _mm512_load_si512(c.x + s * 64 + 64));
    }
    c.y[r] = Sum(_mm512_add_epi32(a0, a1)) + Sum(_mm512_add_epi64(s0, s1));
  }
}

// The layer's bytes summed in order, no prefetch: what the hardware prefetchers give alone.
void Read(const Layer& c, int64_t, int) {
  const int64_t n = c.rows * c.cols / 2;
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
  for (int64_t i = 0; i < n; i += 128) {
    s0 = _mm512_add_epi64(s0, _mm512_sad_epu8(_mm512_load_si512(c.w + i), _mm512_setzero_si512()));
    s1 = _mm512_add_epi64(s1,
                          _mm512_sad_epu8(_mm512_load_si512(c.w + i + 64), _mm512_setzero_si512()));
  }
  c.y[0] = Sum(_mm512_add_epi64(s0, s1));
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? atoll(argv[1]) : 8192, cols = argc > 2 ? atoll(argv[2]) : 2048;
  if (rows % 4 != 0 || cols % 128 != 0) {
    fprintf(stderr, "rows: a multiple of 4; cols: of 128\n");
    return 1;
  }
  const int64_t layer = rows * cols / 2, layers = (768ll << 20) / layer;
  auto* buf = static_cast<uint8_t*>(
      aligned_alloc(2 << 20, (layers * layer + (2 << 20) - 1) / (2 << 20) * (2 << 20)));
  madvise(buf, layers * layer, MADV_HUGEPAGE);
  for (int64_t i = 0; i < layers * layer; ++i) buf[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  alignas(64) static int8_t x[16384];
  for (int i = 0; i < 16384; ++i) x[i] = static_cast<int8_t>(i * 7);
  std::vector<int32_t> y(static_cast<size_t>(rows));
  struct Variant {
    const char* name;
    void (*run)(const Layer&, int64_t, int);
    int64_t ahead;
    int hint;
  };
  const Variant variants[] = {
      {"4 side by side, 16 rows on (t0)", SideBySide, 16, 0},
      {"4 side by side, no prefetch", SideBySide, 0, 0},
      {"one after another, no prefetch", OneAfterAnother, 0, 0},
      {"one after another, 1 KiB on (t0)", OneAfterAnother, 1024, 0},
      {"one after another, 4 KiB on (t2)", OneAfterAnother, 4096, 2},
      {"one after another, 16 KiB on (t2)", OneAfterAnother, 16384, 2},
      {"the bytes read in order", Read, 0, 0},
  };
  printf("%lld x %lld int4, one row of x, %lld layers: GB/s of weights (best of 3), 3 rounds\n",
         static_cast<long long>(rows), static_cast<long long>(cols),
         static_cast<long long>(layers));
  for (const Variant& v : variants) {
    printf("%-36s", v.name);
    for (int round = 0; round < 3; ++round) {
      double best = 1e9;
      for (int t = 0; t < 3; ++t) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < layers; ++i)
          v.run({buf + i * layer, rows, cols, x, y.data()}, v.ahead, v.hint);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = s < best ? s : best;
      }
      printf(" %6.2f", static_cast<double>(layers * layer) / best / 1e9);
    }
    printf("\n");
  }
  free(buf);
}
