// Choosing the next token from logits: greedy, or a random draw shaped by temperature, top-k
// and top-p (nucleus sampling, Holtzman et al. 2020), from a seeded PCG32 generator
// (O'Neill 2014) that gives the same numbers on every platform and compiler. No std::
// distributions (their outputs differ between standard libraries) and no allocation: the
// caller passes scratch (SamplingScratchBytes).
//
// The exact procedure for one row of logits z[0..V):
//   0. NaN logits count as -inf (never drawn). If temperature == 0, or top_k == 1, or only
//      one token is finite: greedy, the argmax, lowest id on ties; no random number is used.
//   1. temperature: z_i / T.
//   2. top-k (0 < k < V): keep the k largest; equal values are ordered by lower id first, so
//      the cut is deterministic. Tokens at -inf are never kept.
//   3. softmax over the kept tokens (in double): p_i = exp(z_i - max) / sum.
//   4. top-p (0 < p < 1): candidates ordered by p descending (ties: lower id first); keep the
//      shortest prefix whose cumulative mass reaches p (sum >= p), at least one token.
//   5. renormalize the kept mass to 1.
//   6. draw u in [0, 1) with 53 random bits (two PCG32 outputs), walk the kept tokens in the
//      order above (by id when neither top-k nor top-p sorted them) and pick the first whose
//      cumulative probability exceeds u (the last kept token if rounding leaves u beyond the
//      total).
// exp() comes from the platform's libm; its last-bit differences can only change a draw that
// lands within rounding of a boundary between two tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/decoding/options.h"  // SamplingOptions

namespace tern {

// PCG32 (pcg32_random_r of the reference implementation: 64-bit LCG state, XSH-RR output).
// `stream` selects one of 2^63 independent sequences: the generator gives sequence r of a
// batch stream r, so a prompt samples the same tokens alone or in any batch row r.
struct Pcg32 {
  uint64_t state = 0;
  uint64_t increment = 1;

  void Seed(uint64_t seed, uint64_t stream);
  uint32_t Next();
  double NextDouble();  // uniform in [0, 1), 53 bits
};

// Checks the options (temperature >= 0 and finite, top_k >= 0, top_p in (0, 1]).
Status CheckSamplingOptions(const SamplingOptions& options);

// Scratch bytes Sample needs for a vocabulary of `vocab` tokens.
size_t SamplingScratchBytes(int32_t vocab);

// Picks one token from logits[0..vocab) per the procedure above. scratch: SamplingScratchBytes
// bytes, 8-byte aligned. logits are not modified. Options must have passed the check.
int32_t Sample(const float* logits, int32_t vocab, const SamplingOptions& options, Pcg32* rng,
               void* scratch);

// The log-probability of `token` in the distribution it was drawn from before the filters:
// log softmax(z / T)[token] over the whole vocabulary, T = options.temperature, or T = 1 when
// decoding is greedy (temperature 0); NaN logits count as -inf (step 0 above). top-k and top-p
// are not applied (a token they cut has its probability here, not -inf). The normalizer is
// vec::LogSumExp (a vectorized loop: about 1e-6 relative to double) over z / T written to
// `scratch` (SamplingScratchBytes, as Sample's; its contents are overwritten).
float TokenLogProbability(const float* logits, int32_t vocab, const SamplingOptions& options,
                          int32_t token, void* scratch);

}  // namespace tern
