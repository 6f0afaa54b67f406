// Adaptive computation time (Graves 2016) as the Universal Transformer uses it per position
// (Dehghani et al. 2019, section 2.2; tensor2tensor's universal_transformer_act_accumulated).
//
// At step t every row (position) computes a halting probability from its step input s_t
// (the state after the coordinate embedding):  p_t = sigmoid(w . s_t + b).  Per row, with
// acc = the probability accumulated so far (starts at 0):
//   - still running and (t is the last step, or acc + p_t > threshold): the row halts at t and
//     takes the remainder  w_t = 1 - acc;
//   - still running otherwise:  w_t = p_t, acc += p_t;
//   - halted earlier:  w_t = 0.
// The stack's output is  sum_t w_t * h_{t+1}  (h_{t+1} = the block's output at step t); the
// weights of a row sum to exactly 1. The recurrence h itself runs unchanged for every row:
// halting only decides the mixture (a halted row stays attention context for the others).
//
// The last-step remainder follows Graves (N(t) is capped at the maximum); tensor2tensor leaves a
// row that never crossed the threshold with weights summing to less than 1.
#pragma once

#include <cstdint>

namespace tern {

struct HaltingWeights {
  const float* weight = nullptr;  // [d_model] (the file's [1, d_model] row)
  const float* bias = nullptr;    // [1]
};

// Per-row ACT state of one stack, in the arena: acc[rows] (1.0 exactly once a row halted; a
// running row always has acc <= threshold < 1), weights[rows] (this step's w_t) and the
// weighted sum out[rows, d_model].
struct ActState {
  float* acc = nullptr;
  float* weights = nullptr;
  float* out = nullptr;
};

// Zeroes acc and out for `rows` rows.
void ActBegin(const ActState& state, int64_t rows, int64_t d_model);

// Computes this step's weights from the step inputs s [rows, d_model] and updates acc.
// Returns how many rows are still running after this step.
int64_t ActHaltingStep(const HaltingWeights& halting, const float* s, int64_t rows, int64_t d_model,
                       float threshold, bool last_step, const ActState& state);

// out += weights[r] * h[r] for every row (after the block ran on this step's input).
void ActAccumulate(const ActState& state, const float* h, int64_t rows, int64_t d_model);

// Whether any real row of a padded batch [batch, seq] (lengths[b] real rows each) still runs.
bool ActAnyRunning(const ActState& state, int64_t batch, int64_t seq, const int32_t* lengths);

}  // namespace tern
