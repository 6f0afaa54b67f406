// log(sum_i e^x_i) of a row of logits as a vectorizable loop: the normalizer of a log-softmax,
// which greedy scoring and beam search compute per row and step over the whole vocabulary
// (32000 logits: with the C library's double exp this took a sixth of a beam-4 step on the
// paper-base model). vec::Exp (relative error ~1e-7) in float lanes, the lanes summed in
// double; agrees with the double-precision reference to about 1e-6 relative.
#pragma once

#include <cstdint>

namespace tern::vec {

// The largest of x[0..n) (-inf for n = 0; NaNs are skipped like the comparisons of ArgMax).
float Max(const float* x, int64_t n);

// The first index of the largest of x[0..n), NaNs skipped; 0 when n = 0 or every entry is NaN.
// Greedy decoding's choice per row and step: a scalar loop with that NaN rule did not vectorize
// and took about 2.6% of a batch-16 translation's time on the paper-base model (16 rows of
// 32000 logits per step). One vector pass.
int32_t ArgMax(const float* x, int64_t n);

// max + log(sum_i e^(x_i - max)) where max = Max(x, n): -inf when every x_i is -inf (a fully
// masked row) or n = 0. Entries of -inf contribute 0.
float LogSumExp(const float* x, int64_t n);

}  // namespace tern::vec
